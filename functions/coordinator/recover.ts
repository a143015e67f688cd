import { type CycleState, superseded } from './cycle-state.ts';
import { CoordinatorSession } from './session.ts';
import { settings } from './settings.ts';

/**
 * Recover (supervisor): waits for `config` (status `waiting`), takes the coordinator over for this execution
 * (creating it from the checkpoints in storage the first time), finishes a pending metadata commit (never aborting
 * a committed checkpoint), carries out what the last owner left in the outbox, recommits the sinks of every
 * completed checkpoint not yet marked committed, and makes `control.trigger` match the checkpoint in flight.
 */
export function handler(input: CycleState): Promise<CycleState> {
  return superseded(input, async () => {
    const s = settings();
    const session = await CoordinatorSession.open(s, input.execution, { claim: true });
    if (session === undefined) return { execution: input.execution, status: 'waiting', phase: 'done', waitSeconds: 10 };
    await session.claim();
    await session.settle();
    await session.commitSinks();
    await session.ensureTrigger();
    return { execution: input.execution, status: session.coordinator.status, phase: 'done', waitSeconds: 0 };
  });
}
