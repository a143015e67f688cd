import { type CycleState, superseded } from './cycle-state.ts';
import { CoordinatorSession } from './session.ts';
import { settings } from './settings.ts';

function reasonOf(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const e = error as { Error?: unknown; Cause?: unknown };
    return `${String(e.Error ?? 'error')}: ${String(e.Cause ?? '')}`.slice(0, 1000);
  }
  return String(error);
}

/**
 * Abort (every Catch): a state failed after its retries. Aborts the checkpoint still collecting acks (its trigger
 * stays superseded by the next one); a checkpoint whose metadata commit is pending is left for the next handler to
 * finish, because it may already be committed. The cycles execution then ends and the supervisor starts another.
 */
export function handler(input: CycleState): Promise<CycleState> {
  return superseded(input, async () => {
    const s = settings();
    const session = await CoordinatorSession.open(s, input.execution);
    if (session === undefined) return { execution: input.execution, status: 'waiting', phase: 'done', waitSeconds: 0 };
    const inFlight = session.coordinator.inFlight;
    const reason = `the coordinator failed: ${reasonOf(input.error)}`;
    s.log({ event: 'coordinator-abort', jobId: s.jobId, execution: input.execution, checkpointId: inFlight?.checkpointId, reason });
    if (inFlight?.phase === 'acknowledging' && session.coordinatorItem?.pendingCommit === undefined) {
      await session.follow(session.coordinator.abort(inFlight.checkpointId, reason, s.now()));
    }
    return { execution: input.execution, status: session.coordinator.status, phase: 'done', waitSeconds: 0 };
  });
}
