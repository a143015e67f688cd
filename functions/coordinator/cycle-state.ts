import type { CheckpointCoordinator } from '../../lib/checkpoint/coordinator.ts';
import { cycleWait, type CycleWait } from '../../lib/cluster/coordinator-cycle.ts';
import { CoordinatorSupersededError } from '../../lib/cluster/coordinator-errors.ts';
import type { CoordinatorSettings } from './settings.ts';

/**
 * The payload that travels between the states of the supervisor and cycles machines: ids and a deadline only, never
 * coordinator state (that lives in the control table).
 */
export interface CycleState {
  /** The supervisor execution (its ARN) that owns the coordinator. */
  readonly execution: string;
  /** Epoch ms after which the cycles execution returns; set by its first Trigger. */
  readonly deadline?: number;
  /** `waiting`: no `config` yet; `superseded`: another execution owns the job; the others are the coordinator's status. */
  readonly status?: 'waiting' | 'superseded' | 'running' | 'stopped' | 'finished' | 'halted';
  readonly phase?: CycleWait['phase'] | 'commit';
  readonly waitSeconds?: number;
  /** What a Catch put there (Error, Cause), for Abort. */
  readonly error?: unknown;
}

export function deadlineOf(input: CycleState, settings: CoordinatorSettings): number {
  return input.deadline ?? settings.now() + settings.cycleSeconds * 1000;
}

/** The output of a cycle handler: where the cycle goes next. */
export function nextCycleState(input: CycleState, settings: CoordinatorSettings, coordinator: CheckpointCoordinator, sinksPending: boolean): CycleState {
  const deadline = deadlineOf(input, settings);
  const status = coordinator.status;
  // A completed checkpoint's sinks come first, also after a stop (its savepoint's committables) and past the deadline.
  if (sinksPending) return { execution: input.execution, deadline, status, phase: 'commit', waitSeconds: 0 };
  const wait = cycleWait(coordinator, { now: settings.now(), deadline, ackPollMs: settings.ackPollMs });
  return { execution: input.execution, deadline, status, ...(status === 'running' ? wait : { phase: 'done', waitSeconds: 0 }) };
}

/** A superseded execution ends quietly (`Superseded`); every other error goes to the state's Retry and Catch. */
export async function superseded(input: CycleState, body: () => Promise<CycleState>): Promise<CycleState> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof CoordinatorSupersededError) return { execution: input.execution, status: 'superseded', phase: 'done', waitSeconds: 0 };
    throw error;
  }
}
