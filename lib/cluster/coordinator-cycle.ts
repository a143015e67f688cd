import type { CheckpointCoordinator, CoordinatorStep } from '../checkpoint/coordinator.ts';
import type { CommitMetadataCommand, CoordinatorCommand, CoordinatorState, WriteSavepointCommand } from '../checkpoint/coordinator-protocol.ts';
import type { TaskId } from '../checkpoint/types.ts';
import type { AckItem, ControlTrigger, SlotCommittablesRef } from './control-items.ts';

/**
 * Pure decisions of the cluster's Step Functions coordinator: how ack items become coordinator events, which
 * commands a handler persists before carrying them out, what trigger the workers see and how long a cycle waits.
 * The handlers in functions/coordinator do the I/O around them.
 */

/** What applying a checkpoint's ack items did. */
export interface AppliedAcks {
  readonly coordinator: CheckpointCoordinator;
  readonly commands: readonly CoordinatorCommand[];
  /** Committables objects of the slots whose acks count, by slot (merged over the refs already known). */
  readonly committables: Readonly<Record<string, SlotCommittablesRef>>;
  /** The fencing epoch of every slot whose ack counts, by slot (merged over the epochs already known). */
  readonly epochs: Readonly<Record<string, number>>;
  /** Acks that were not accepted (late, duplicate, unexpected), for the log. */
  readonly ignored: number;
}

/**
 * Applies the ack and decline items of the checkpoint in flight. An ack item of slot s acknowledges every task
 * handle it carries and reports the slot's finished tasks; a decline aborts the checkpoint. Items of another
 * checkpoint are ignored. Idempotent: a handle already acknowledged is a `duplicate` and changes nothing.
 */
export function applyAcks(
  coordinator: CheckpointCoordinator,
  acks: readonly AckItem[],
  now: number,
  known: Readonly<Record<string, SlotCommittablesRef>> = {},
  knownEpochs: Readonly<Record<string, number>> = {},
): AppliedAcks {
  let current = coordinator;
  const commands: CoordinatorCommand[] = [];
  const committables: Record<string, SlotCommittablesRef> = { ...known };
  const epochs: Record<string, number> = { ...knownEpochs };
  let ignored = 0;
  const take = (step: CoordinatorStep): void => {
    current = step.coordinator;
    commands.push(...step.commands);
  };
  for (const ack of [...acks].sort((a, b) => a.slot - b.slot)) {
    const inFlight = current.inFlight;
    if (inFlight === undefined || inFlight.checkpointId !== ack.checkpointId || inFlight.phase !== 'acknowledging') {
      ignored++;
      continue;
    }
    if (ack.kind === 'decline') {
      take(current.decline(ack.checkpointId, taskOfSlot(current.state, ack.slot), `slot ${ack.slot} (epoch ${ack.epoch}): ${ack.reason}`, now));
      continue;
    }
    if (ack.committables !== undefined) committables[String(ack.slot)] = ack.committables;
    epochs[String(ack.slot)] = ack.epoch;
    for (const task of ack.finishedTasks ?? []) {
      if (current.state.expectedTasks.some((t) => t.vertex === task.vertex && t.subtask === task.subtask)) take(current.taskFinished(task, now));
    }
    for (const handle of ack.handles) {
      if (current.inFlight?.checkpointId !== ack.checkpointId) break;
      const step = current.ack(ack.checkpointId, handle, now);
      if (step.outcome !== 'accepted') ignored++;
      take(step);
    }
  }
  return { coordinator: current, commands, committables, epochs, ignored };
}

/** A task of the slot, to name the slot in a decline's reason. */
function taskOfSlot(state: CoordinatorState, slot: number): TaskId {
  return state.expectedTasks.find((t) => t.subtask === slot) ?? { vertex: 0, subtask: slot };
}

/** A step's commands: the metadata or savepoint write (persisted as `pendingCommit`) and the rest (the outbox). */
export function splitCommands(commands: readonly CoordinatorCommand[]): {
  readonly write: CommitMetadataCommand | WriteSavepointCommand | undefined;
  readonly outbox: readonly CoordinatorCommand[];
} {
  let write: CommitMetadataCommand | WriteSavepointCommand | undefined;
  const outbox: CoordinatorCommand[] = [];
  for (const command of commands) {
    if (command.kind === 'commitMetadata' || command.kind === 'writeSavepoint') write = command;
    else outbox.push(command);
  }
  return { write, outbox };
}

/** The `control.trigger` for the checkpoint in flight, conditioned on `leaseGeneration`; undefined when none is. */
export function controlTriggerFor(state: CoordinatorState, leaseGeneration: number): ControlTrigger | undefined {
  const f = state.inFlight;
  if (f === undefined) return undefined;
  const stop = f.savepoint && f.savepointRequestId !== undefined && (state.stopRequests ?? []).includes(f.savepointRequestId);
  return { checkpointId: f.checkpointId, savepoint: f.savepoint, timestamp: f.triggeredAt, leaseGeneration, ...(stop ? { stop: true } : {}) };
}

/** Where a cycles execution goes next: wait for acks (`collect`), wait for the next trigger (`idle`), or end (`done`). */
export interface CycleWait {
  readonly phase: 'collect' | 'idle' | 'done';
  readonly waitSeconds: number;
}

export interface CycleTiming {
  readonly now: number;
  /** Epoch ms after which the cycles execution returns (240 s after it started: Express runs at most 5 minutes). */
  readonly deadline: number;
  /** How often acks are looked for while a checkpoint is in flight. */
  readonly ackPollMs: number;
}

/**
 * How long the cycle waits before its next look. While a checkpoint is in flight: `ackPollMs` (acks arrive in
 * well under the timeout, which the coordinator enforces at every event anyway). Otherwise until the coordinator's
 * next wake-up; `done` when that is past the deadline or nothing is due at all (halted, finished, stopped), so the
 * supervisor starts the next cycles execution or ends.
 */
export function cycleWait(coordinator: CheckpointCoordinator, timing: CycleTiming): CycleWait {
  const { now, deadline, ackPollMs } = timing;
  if (now >= deadline) return { phase: 'done', waitSeconds: 0 };
  const seconds = (ms: number): number => Math.max(0, Math.ceil(ms / 1000));
  if (coordinator.inFlight !== undefined) {
    return { phase: 'collect', waitSeconds: Math.min(seconds(ackPollMs), seconds(deadline - now)) };
  }
  const wake = coordinator.nextWakeup(now);
  if (wake === undefined || wake >= deadline) return { phase: 'done', waitSeconds: 0 };
  return { phase: 'idle', waitSeconds: seconds(wake - now) };
}

/** The savepoint request ids in `requests` (request item id -> coordinator request id), reversed. */
export function requestItemOf(requests: Readonly<Record<string, number>> | undefined, requestId: number): string | undefined {
  for (const [item, id] of Object.entries(requests ?? {})) if (id === requestId) return item;
  return undefined;
}
