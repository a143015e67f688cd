import { deadlineOf, nextCycleState, type CycleState, superseded } from './cycle-state.ts';
import { CoordinatorSession } from './session.ts';
import { settings } from './settings.ts';

/**
 * Trigger (cycles): takes queued savepoint and stop requests, ticks the coordinator (a periodic checkpoint when
 * due, timeouts) and writes `control.trigger`, but only once the previous checkpoint's sinks are committed. Returns
 * how long to wait: `ackPollMs` while a checkpoint is in flight, else until the next wake-up; `done` past the deadline.
 */
export function handler(input: CycleState): Promise<CycleState> {
  return superseded(input, async () => {
    const s = settings();
    const session = await CoordinatorSession.open(s, input.execution);
    if (session === undefined) return { execution: input.execution, status: 'waiting', phase: 'done', waitSeconds: 0 };
    const deadline = deadlineOf(input, s);
    await session.settle();
    await session.takeRequests();
    const sinksPending = (session.coordinatorItem?.sinkCommits ?? []).length > 0;
    if (!sinksPending) await session.follow(session.coordinator.tick(s.now()));
    await session.ensureTrigger();
    return nextCycleState({ ...input, deadline }, s, session.coordinator, session.sinksPending());
  });
}
