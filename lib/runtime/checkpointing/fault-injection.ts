/**
 * Deterministic faults for the crash tests of exactly-once checkpointing. Not a feature: nothing documents these
 * variables but this header, and with neither of them set every function here is a no-op chosen at module load.
 *
 *   SLUICE_CRASH_AT=<point>:<n>[,<point>:<n>...]
 *     The n-th time (1-based) the process reaches <point>, it sends itself SIGKILL: the whole job dies at once,
 *     worker threads included, exactly like a crash (no finally blocks, no flushes, no exit handlers).
 *     after-task-state-written  a task's state file of a checkpoint is written (asynchronous phase), not acked
 *     after-prepare-commit      a sink pre-committed at a barrier; the checkpoint is not complete
 *     after-metadata-commit     a checkpoint is complete on disk; no sink has been notified or committed
 *     during-commit             a part-file commit renamed a file and has more to rename
 *
 *   SLUICE_FAIL_AT=<point>:<n>[,<point>:<n>...]
 *     The n-th time <point> is reached, an InjectedFailureError is thrown there, which fails the task (or the
 *     restore) so that the restart strategy runs.
 *     snapshot  the synchronous phase of a task's checkpoint (OperatorChain.snapshot)
 *     restore   reading a checkpoint's task state back (loadRestoredJob; once per thread that restores)
 *
 * Counts are per process, over every attempt of the job: the main thread shares its counters with the worker
 * threads it starts (a SharedArrayBuffer in the worker environment data), so `snapshot:3` is the third snapshot of
 * any task on any thread. Which thread gets there third can vary; how many times the process got there cannot.
 * A malformed value is a ConfigError at module load, so a typo cannot make a crash test pass without crashing.
 */
import { writeSync } from 'node:fs';
import { getEnvironmentData, isMainThread, setEnvironmentData } from 'node:worker_threads';
import { ConfigError, SluiceError } from '../../core/index.ts';

export type CrashPoint = 'after-task-state-written' | 'after-prepare-commit' | 'after-metadata-commit' | 'during-commit';
export type FailPoint = 'snapshot' | 'restore';

const CRASH_POINTS: readonly CrashPoint[] = ['after-task-state-written', 'after-prepare-commit', 'after-metadata-commit', 'during-commit'];
const FAIL_POINTS: readonly FailPoint[] = ['snapshot', 'restore'];
const COUNTERS_KEY = 'sluice:fault-injection-counters';

/** Thrown at a fail point of SLUICE_FAIL_AT. Retriable: a restart is what the injection wants to exercise. */
export class InjectedFailureError extends SluiceError {
  constructor(point: FailPoint, n: number) {
    super('INJECTED_FAILURE', `injected failure at ${point} (occurrence ${n}, SLUICE_FAIL_AT)`, { retriable: true });
  }
}

function parseSpec<P extends string>(variable: string, value: string | undefined, points: readonly P[]): Map<P, Set<number>> {
  const spec = new Map<P, Set<number>>();
  if (value === undefined || value.trim() === '') return spec;
  for (const entry of value.split(',')) {
    const match = /^([a-z-]+):(\d+)$/.exec(entry.trim());
    const point = match?.[1] as P | undefined;
    const n = Number(match?.[2]);
    if (point === undefined || !points.includes(point) || !Number.isSafeInteger(n) || n < 1) {
      throw new ConfigError(`${variable}: "${entry}" is not <point>:<n> with n >= 1 and point one of ${points.join(', ')}`);
    }
    spec.set(point, (spec.get(point) ?? new Set<number>()).add(n));
  }
  return spec;
}

/** One counter per point, shared by every thread of the process (worker threads started after this module loaded). */
function sharedCounters(): Int32Array {
  const inherited = isMainThread ? undefined : getEnvironmentData(COUNTERS_KEY);
  const buffer = inherited instanceof SharedArrayBuffer ? inherited : new SharedArrayBuffer(4 * (CRASH_POINTS.length + FAIL_POINTS.length));
  if (isMainThread) setEnvironmentData(COUNTERS_KEY, buffer);
  return new Int32Array(buffer);
}

const crashSpec = parseSpec('SLUICE_CRASH_AT', process.env['SLUICE_CRASH_AT'], CRASH_POINTS);
const failSpec = parseSpec('SLUICE_FAIL_AT', process.env['SLUICE_FAIL_AT'], FAIL_POINTS);
const counters = crashSpec.size + failSpec.size > 0 ? sharedCounters() : undefined;

/** Counts this arrival at counter `slot` and returns its 1-based number, process-wide. */
function arrive(slot: number): number {
  return Atomics.add(counters as Int32Array, slot, 1) + 1;
}

function noop(): void {}

/** Kills the process with SIGKILL if SLUICE_CRASH_AT names this arrival at `point`. */
export const crashPoint: (point: CrashPoint) => void =
  crashSpec.size === 0
    ? noop
    : (point) => {
        const at = crashSpec.get(point);
        if (at === undefined) return;
        const n = arrive(CRASH_POINTS.indexOf(point));
        if (!at.has(n)) return;
        // Straight to fd 2: a worker thread's process.stderr is forwarded asynchronously and would die unread.
        writeSync(2, `sluice: SLUICE_CRASH_AT ${point}:${n} reached, killing the process\n`);
        process.kill(process.pid, 'SIGKILL');
      };

/** Throws InjectedFailureError if SLUICE_FAIL_AT names this arrival at `point`. */
export const failPoint: (point: FailPoint) => void =
  failSpec.size === 0
    ? noop
    : (point) => {
        const at = failSpec.get(point);
        if (at === undefined) return;
        const n = arrive(CRASH_POINTS.length + FAIL_POINTS.indexOf(point));
        if (at.has(n)) throw new InjectedFailureError(point, n);
      };
