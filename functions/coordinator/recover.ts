import { type CycleState, superseded } from './cycle-state.ts';
import { CoordinatorSession } from './session.ts';
import { settings } from './settings.ts';

/**
 * Recover (supervisor): waits for `config` (status `waiting`), takes the coordinator over for this execution
 * (creating it from the checkpoints in storage the first time), finishes a pending metadata commit (never aborting
 * a committed checkpoint), carries out what the last owner left in the outbox, recommits the sinks of every
 * completed checkpoint not yet marked committed, makes `control.trigger` match the checkpoint in flight, deletes
 * the folders of checkpoints that never completed and were not written for twice the timeout, and, once the job halted, deletes shared state files that no complete checkpoint lists (older than twice the timeout).
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
    await session.removeAbandonedCheckpoints();
    // Only once the job halted (every slot stopped at the stop savepoint): while slots run, their RocksDB
    // incremental chains go on referencing files of checkpoints that never completed (aborted ones), which a later
    // completed checkpoint lists again, so "listed by no complete checkpoint" does not mean unreferenced. A running
    // job's orphans stay until its stop.
    if (session.coordinator.status === 'halted') await session.collectSharedFiles();
    return { execution: input.execution, status: session.coordinator.status, phase: 'done', waitSeconds: 0 };
  });
}
