import { nextCycleState, type CycleState, superseded } from './cycle-state.ts';
import { CoordinatorSession } from './session.ts';
import { settings } from './settings.ts';

/**
 * CommitSinks (cycles): commits the committables of every completed checkpoint not yet committed, checkpoint by
 * checkpoint, through the sink commit registry (never loading job code), moving `control.sinkCommittedThrough`
 * after each. Idempotent: the committers' markers make a repeat after a failure halfway change nothing.
 */
export function handler(input: CycleState): Promise<CycleState> {
  return superseded(input, async () => {
    const s = settings();
    const session = await CoordinatorSession.open(s, input.execution);
    if (session === undefined) return { execution: input.execution, status: 'waiting', phase: 'done', waitSeconds: 0 };
    await session.settle();
    await session.commitSinks();
    return nextCycleState(input, s, session.coordinator, session.sinksPending());
  });
}
