import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  CheckpointCoordinator,
  taskStatePath,
  type CoordinatorCommand,
  type CoordinatorState,
  type TaskId,
} from '../../../lib/checkpoint/index.ts';
import type { FencingToken } from '../../../lib/core/fencing.ts';

const T0 = 10_000;
const TASKS: TaskId[] = [
  { vertex: 0, subtask: 0 },
  { vertex: 0, subtask: 1 },
  { vertex: 1, subtask: 0 },
  { vertex: 2, subtask: 0 },
];
const SOURCES = TASKS.filter((t) => t.vertex === 0);
const CURRENT: FencingToken = { attempt: 1, epoch: 3 };
const STALE: FencingToken = { attempt: 0, epoch: 2 };
const OPTIONS = { intervalMs: 50, minPauseMs: 10, timeoutMs: 200, retain: 2, historySize: 5, tolerableFailures: 2, failureBackoffMs: 5 };

/**
 * One input of a random run. Events that only make sense in some states (a metadata commit, a stop report) pick
 * what is pending, or do nothing: both runs see the same states, so they pick the same.
 */
type Event =
  | { type: 'advance'; ms: number }
  | { type: 'tick' }
  | { type: 'ack'; task: number; offset: number; stale: boolean; withToken: boolean }
  | { type: 'decline'; task: number; offset: number; stale: boolean }
  | { type: 'taskFinished'; task: number }
  | { type: 'taskFailed'; task: number; roll: number }
  | { type: 'sourceFinished'; task: number }
  | { type: 'savepoint'; stop: boolean }
  | { type: 'commitResult'; ok: boolean }
  | { type: 'stopResult'; ok: boolean };

const task = fc.nat({ max: TASKS.length - 1 });
/** Mostly the checkpoint in flight, sometimes the one before or after it. */
const offset = fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.constant(1) });
const event: fc.Arbitrary<Event> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ type: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 40 }) }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('tick' as const) }) },
  {
    weight: 14,
    arbitrary: fc.record({ type: fc.constant('ack' as const), task, offset, stale: fc.boolean(), withToken: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('decline' as const), task, offset: fc.integer({ min: -1, max: 1 }), stale: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('taskFinished' as const), task }) },
  // Rare: a task failure stops the coordinator for good.
  { weight: 1, arbitrary: fc.record({ type: fc.constant('taskFailed' as const), task, roll: fc.nat({ max: 7 }) }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('sourceFinished' as const), task: fc.nat({ max: SOURCES.length - 1 }) }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('savepoint' as const), stop: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ type: fc.constant('commitResult' as const), ok: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('stopResult' as const), ok: fc.boolean() }) },
);

interface Run {
  commands: CoordinatorCommand[][];
  states: CoordinatorState[];
}

/**
 * Applies the events to a coordinator; with `viaJson`, the coordinator is stored as JSON and resumed from it
 * before every event, as a stateless driver (a Lambda) would.
 */
function run(events: readonly Event[], viaJson: boolean): Run {
  let c = CheckpointCoordinator.start(OPTIONS, { tasks: TASKS, sourceTasks: SOURCES, maxParallelism: 16, now: T0, fencing: CURRENT });
  let now = T0;
  const out: Run = { commands: [], states: [] };
  for (const e of events) {
    if (viaJson) c = CheckpointCoordinator.resume(JSON.parse(JSON.stringify(c.options)), JSON.parse(JSON.stringify(c.state)) as CoordinatorState);
    const step = apply(c, e, now);
    if (e.type === 'advance') now += e.ms;
    if (step === undefined) continue;
    c = step.coordinator;
    out.commands.push([...step.commands]);
    out.states.push(c.state);
  }
  return out;
}

function apply(c: CheckpointCoordinator, e: Event, now: number): { coordinator: CheckpointCoordinator; commands: readonly CoordinatorCommand[] } | undefined {
  const f = c.inFlight;
  const id = (offset: number) => Math.max(1, (f?.checkpointId ?? c.lastCheckpointId) + offset);
  switch (e.type) {
    case 'advance':
      return undefined;
    case 'tick':
      return c.tick(now);
    case 'ack': {
      // Mostly a task the checkpoint still waits for, else any (a duplicate, a finished task).
      const waiting = f?.phase === 'acknowledging' && e.offset === 0 && !e.stale ? f.waitingFor : [];
      const t = waiting.length > 0 ? waiting[e.task % waiting.length]! : TASKS[e.task]!;
      const checkpointId = id(e.offset);
      const handle = { task: t, vertexName: `v${t.vertex}`, path: taskStatePath({ kind: 'checkpoint', checkpointId }, t), bytes: 7, sha256: 'c'.repeat(64) };
      return c.ack(checkpointId, handle, now, e.withToken ? (e.stale ? STALE : CURRENT) : undefined);
    }
    case 'decline':
      return c.decline(id(e.offset), TASKS[e.task]!, 'snapshot failed', now, e.stale ? STALE : CURRENT);
    case 'taskFinished':
      return c.taskFinished(TASKS[e.task]!, now);
    case 'taskFailed':
      return e.roll === 0 ? c.taskFailed(TASKS[e.task]!, 'boom', now) : undefined;
    case 'sourceFinished':
      return c.sourceFinished(SOURCES[e.task]!, now);
    case 'savepoint':
      return c.triggerSavepoint(now, { stop: e.stop });
    case 'commitResult':
      if (f?.phase !== 'committing') return undefined;
      return e.ok ? c.metadataCommitted(f.checkpointId, now) : c.abort(f.checkpointId, 'writing the metadata failed', now);
    case 'stopResult': {
      const stopping = c.state.stopping;
      if (stopping === undefined) return undefined;
      return e.ok ? c.stopPrepared(stopping.checkpointId, now) : c.stopFailed(stopping.checkpointId, 'disk full', now);
    }
  }
}

/** Command kinds the random runs produced: a generator that never reaches a stop would prove little. */
const SEEN = new Map<string, number>();
afterAll(() => {
  const expected = ['trigger', 'commitMetadata', 'writeSavepoint', 'notifyComplete', 'savepointComplete', 'prepareStop', 'halt', 'savepointNotStopped', 'abort'];
  expect(expected.filter((kind) => (SEEN.get(kind) ?? 0) === 0)).toEqual([]);
});
describe('checkpoint coordinator state as JSON', () => {
  it('emits the same commands when its state is stored as JSON and resumed between every event', () => {
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 150, size: 'max' }), (events) => {
        const direct = run(events, false);
        for (const step of direct.commands) for (const c of step) SEEN.set(c.kind, (SEEN.get(c.kind) ?? 0) + 1);
        const stored = run(events, true);
        expect(stored.commands).toEqual(direct.commands);
        // The state itself survives JSON unchanged (nothing but plain data in it).
        for (const state of direct.states) expect(JSON.parse(JSON.stringify(state))).toEqual(state);
      }),
      { numRuns: 300 },
    );
  });

  it('never notifies a savepoint that does not stop the job, and halts only after a durable stop savepoint', () => {
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 150, size: 'max' }), (events) => {
        const { commands } = run(events, false);
        const savepoints = new Map<number, boolean>();
        const durable = new Set<number>();
        let halted = false;
        for (const step of commands) {
          for (const command of step) {
            // After halt nothing is emitted but answers refusing savepoint requests.
            if (halted) {
              expect(command.kind).toBe('savepointRejected');
              continue;
            }
            if (command.kind === 'writeSavepoint') savepoints.set(command.metadata.checkpointId, command.stop);
            if (command.kind === 'prepareStop') durable.add(command.checkpointId);
            if (command.kind === 'notifyComplete' && savepoints.has(command.checkpointId)) {
              expect(savepoints.get(command.checkpointId)).toBe(true);
              expect(durable.has(command.checkpointId)).toBe(true);
            }
            if (command.kind === 'halt') {
              expect(durable.has(command.checkpointId)).toBe(true);
              halted = true;
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
