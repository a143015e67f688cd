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
 *     after-ack                 a cluster slot put its ack item for a checkpoint (`sluice worker`), before anything
 *                               else: the coordinator may complete the checkpoint with it, the slot's lease runs out
 *
 *   SLUICE_FAIL_AT=<point>:<n>[+][,<point>:<n>[+]...]
 *     The n-th time <point> is reached (with `+`: that time and every time after), an error is thrown there.
 *     snapshot          the synchronous phase of a task's checkpoint (OperatorChain.snapshot): InjectedFailureError,
 *                       which fails the task so that the restart strategy runs
 *     restore           reading a checkpoint's task state back (loadRestoredJob; once per thread that restores)
 *     checkpoint-write  a write to checkpoint storage (a task state file or a checkpoint's metadata) fails as on a
 *                       full disk: CheckpointIoError naming the file, caused by an ENOSPC error
 *
 * Counts are per process, over every attempt of the job: the main thread shares its counters with the worker
 * threads it starts (a SharedArrayBuffer in the worker environment data), so `snapshot:3` is the third snapshot of
 * any task on any thread. Which thread gets there third can vary; how many times the process got there cannot.
 * A malformed value is a ConfigError at module load, so a typo cannot make a crash test pass without crashing.
 */
import { writeSync } from 'node:fs';
import { getEnvironmentData, isMainThread, setEnvironmentData } from 'node:worker_threads';
import { ConfigError, SluiceError } from './index.ts';

export type CrashPoint = 'after-task-state-written' | 'after-prepare-commit' | 'after-metadata-commit' | 'during-commit' | 'after-ack';
export type FailPoint = 'snapshot' | 'restore' | 'checkpoint-write';

const CRASH_POINTS: readonly CrashPoint[] = ['after-task-state-written', 'after-prepare-commit', 'after-metadata-commit', 'during-commit', 'after-ack'];
const FAIL_POINTS: readonly FailPoint[] = ['snapshot', 'restore', 'checkpoint-write'];
const COUNTERS_KEY = 'sluice:fault-injection-counters';

/** Thrown at a fail point of SLUICE_FAIL_AT. Retriable: a restart is what the injection wants to exercise. */
export class InjectedFailureError extends SluiceError {
  constructor(point: FailPoint, n: number) {
    super('INJECTED_FAILURE', `injected failure at ${point} (occurrence ${n}, SLUICE_FAIL_AT)`, { retriable: true });
  }
}

/** The arrivals at one point that fault: listed ones, and every one from `from` on (`<n>+`). */
class Arrivals {
  readonly listed = new Set<number>();
  from = Number.POSITIVE_INFINITY;

  has(n: number): boolean {
    return this.listed.has(n) || n >= this.from;
  }
}

function parseSpec<P extends string>(variable: string, value: string | undefined, points: readonly P[], allowFrom: boolean): Map<P, Arrivals> {
  const spec = new Map<P, Arrivals>();
  if (value === undefined || value.trim() === '') return spec;
  for (const entry of value.split(',')) {
    const match = /^([a-z-]+):(\d+)(\+?)$/.exec(entry.trim());
    const point = match?.[1] as P | undefined;
    const n = Number(match?.[2]);
    const onwards = match?.[3] === '+';
    if (point === undefined || !points.includes(point) || !Number.isSafeInteger(n) || n < 1 || (onwards && !allowFrom)) {
      const form = allowFrom ? '<point>:<n> or <point>:<n>+' : '<point>:<n>';
      throw new ConfigError(`${variable}: "${entry}" is not ${form} with n >= 1 and point one of ${points.join(', ')}`);
    }
    const arrivals = spec.get(point) ?? new Arrivals();
    if (onwards) arrivals.from = Math.min(arrivals.from, n);
    else arrivals.listed.add(n);
    spec.set(point, arrivals);
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

const crashSpec = parseSpec('SLUICE_CRASH_AT', process.env['SLUICE_CRASH_AT'], CRASH_POINTS, false);
const failSpec = parseSpec('SLUICE_FAIL_AT', process.env['SLUICE_FAIL_AT'], FAIL_POINTS, true);
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

/** Whether SLUICE_FAIL_AT names this arrival at `point`; undefined when it does not, else the arrival's number. */
function failingArrival(point: FailPoint): number | undefined {
  const at = failSpec.get(point);
  if (at === undefined) return undefined;
  const n = arrive(CRASH_POINTS.length + FAIL_POINTS.indexOf(point));
  return at.has(n) ? n : undefined;
}

/** Throws InjectedFailureError if SLUICE_FAIL_AT names this arrival at `point`. */
export const failPoint: (point: Exclude<FailPoint, 'checkpoint-write'>) => void =
  failSpec.size === 0
    ? noop
    : (point) => {
        const n = failingArrival(point);
        if (n !== undefined) throw new InjectedFailureError(point, n);
      };

/** A full disk, as the `checkpoint-write` fail point simulates it: what Node reports for ENOSPC. */
export class InjectedDiskFullError extends SluiceError {
  readonly errno = -28;
  readonly syscall = 'write';

  constructor(n: number) {
    super('ENOSPC', `ENOSPC: no space left on device, write (injected: SLUICE_FAIL_AT checkpoint-write, occurrence ${n})`, { retriable: true });
  }
}

/** Throws InjectedDiskFullError if SLUICE_FAIL_AT names this write to checkpoint storage (`checkpoint-write`). */
export const diskFullPoint: () => void = !failSpec.has('checkpoint-write')
  ? noop
  : () => {
      const n = failingArrival('checkpoint-write');
      if (n !== undefined) throw new InjectedDiskFullError(n);
    };

/** Whether SLUICE_FAIL_AT injects failures of checkpoint storage writes (then storage is wrapped to check). */
export const injectsDiskFull: boolean = failSpec.has('checkpoint-write');
