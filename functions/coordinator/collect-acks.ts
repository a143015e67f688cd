import { nextCycleState, type CycleState, superseded } from './cycle-state.ts';
import { CoordinatorSession } from './session.ts';
import { settings } from './settings.ts';

/**
 * CollectAcks (cycles): applies the in-flight checkpoint's ack items, ticks (timeouts), and once every task
 * acknowledged persists the exact metadata, commits it (object, then one transaction with the lease-generation
 * check) and sets `control.completed`. Phase `collect` while acks are missing, else `commit` (on to CommitSinks).
 */
export function handler(input: CycleState): Promise<CycleState> {
  return superseded(input, async () => {
    const s = settings();
    const session = await CoordinatorSession.open(s, input.execution);
    if (session === undefined) return { execution: input.execution, status: 'waiting', phase: 'done', waitSeconds: 0 };
    await session.settle();
    await session.collectAcks();
    const next = nextCycleState(input, s, session.coordinator, session.sinksPending());
    return next.phase === 'idle' ? { ...next, phase: 'commit', waitSeconds: 0 } : next;
  });
}
