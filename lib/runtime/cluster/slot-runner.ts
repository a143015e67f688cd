import { CancelledError, systemClock, type BarrierElement, type Clock, type FencingToken } from '../../core/index.ts';
import type { AckItem, ClusterConfigItem, ControlItem } from '../../cluster/control-items.ts';
import type { ExchangeTransport } from '../../cluster/exchange/index.ts';
import type { AckWriter } from '../../cluster/ports.ts';
import type { TaskId } from '../../checkpoint/types.ts';
import type { CompiledJobOptions } from '../../contracts/job-options.ts';
import { isTwoPhaseCommitSink } from '../../connectors/sink.ts';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';
import { SinkOperator } from '../../operators/basic/sink-operator.ts';
import type { KeyedStateBackend } from '../../state/index.ts';
import type { TaskStateStore, WrittenTaskState } from '../../storage/checkpoint-storage.ts';
import { ObjectTaskStateStore } from '../../storage/object-task-state-store.ts';
import type { ObjectStore } from '../../storage/object-store.ts';
import type { TaskSnapshot } from '../../storage/task-snapshot.ts';
import { ConfigError } from '../../core/index.ts';
import { CheckpointHub } from '../checkpoint-driver/checkpoint-hub.ts';
import type { CheckpointParticipant } from '../checkpoint-driver/participant.ts';
import { ThreadChannelFactory } from '../channels/thread-channel-factory.ts';
import { createTask, type DeployedTask } from '../deployed-task.ts';
import type { KeyedServices } from '../operator-chain.ts';
import { openExternalRestore } from '../restore/external-restore.ts';
import type { RestoredJob } from '../restore/restore-plan.ts';
import { runTasks } from '../run-tasks.ts';
import { keyGroupRangeForSubtask } from '../../core/index.ts';
import { computeSplits } from '../in-thread-runner.ts';
import { staticSplitEnumerator } from '../task-deployment.ts';
import { LeaseLostError, SlotFailedError } from './slot-errors.ts';
import { SlotCheckpoints } from './slot-checkpoints.ts';
import { loadSlotState, readCompletedMetadata, restoredSlotTask, type CompletedCheckpointRef } from './slot-restore.ts';
import { checkSlotPlan, edgeModes, wireSlotTask } from './slot-wiring.ts';
import { restoredExchangeState, SlotExchange } from './slot-exchange.ts';

/** How a slot got its state: the previous epoch's RocksDB database here, the checkpoint's files, or none. */
export type RestoreKind = 'local' | 's3' | 'fresh';

export interface SlotStarted {
  readonly restore: RestoreKind;
  /** From `start` until every task of the slot opened with its state. */
  readonly ms: number;
  readonly checkpointId: number | undefined;
}

/** What a slot tells the worker. */
export interface SlotRunnerEvents {
  acked(item: AckItem): void;
  /** The lease refused a write of the slot: it stopped. */
  fenced(what: string, checkpointId: number): void;
  warn(line: string): void;
}

export interface SlotRunnerInit {
  readonly plan: PhysicalPlan;
  readonly jobOptions: CompiledJobOptions;
  readonly config: ClusterConfigItem;
  readonly slot: number;
  readonly epoch: number;
  /** Local restarts of the slot on this worker so far (for logs; the epoch fences). @default 0 */
  readonly attempt?: number;
  readonly owner: string;
  /** The checkpoint storage's objects (S3, or a folder in tests). */
  readonly store: ObjectStore;
  readonly acks: AckWriter;
  /** Keyed state of the slot at this epoch (RocksDB in the slot's epoch directory, or memory). */
  readonly services: KeyedServices;
  /** The control item when the slot was started: its `completed` is what the slot restores. */
  readonly control: ControlItem | undefined;
  /** The exchange stream's ends; absent: a plan with an exchange edge is a ConfigError. */
  readonly exchange?: ExchangeTransport | undefined;
  readonly clock?: Clock;
  readonly now?: () => number;
  readonly events: SlotRunnerEvents;
}

/**
 * Runs slot s of a cluster job in this process: subtask s of every vertex, restored from the latest completed
 * checkpoint (only this slot's task files), over in-memory channels within the slot (local and aligned edges) and
 * the exchange seam. Checkpoints: `onControl` injects a new trigger's barrier at the slot's sources and delivers
 * completions; the slot's tasks ack through SlotCheckpoints, which puts one fenced ack item per checkpoint.
 * Two-phase-commit sinks run in coordinator-commit mode. `done` settles when the slot ends: resolved after `stop`,
 * rejected with SlotFailedError when a task failed (the worker restarts it at a new epoch).
 */
export class SlotRunner {
  readonly slot: number;
  readonly epoch: number;
  private tasks: DeployedTask[] = [];
  private hub: CheckpointHub | undefined;
  private checkpoints: SlotCheckpoints | undefined;
  private exchange: SlotExchange | undefined;
  /** The exchange failed under the slot (kept for tasks created after it). */
  private failure: unknown;
  /** `control.completed` without `slotEpochs` was warned about (the exchange cannot release records then). */
  private warnedEpochs = false;
  private readonly guard: StoppableTaskStateStore;
  private lastTrigger = 0;
  private lastCompleted = 0;
  private stopping: Error | undefined;
  /** The tasks exist: control polls before that are ignored (the next poll brings the same trigger again). */
  private deployed = false;
  private stopAfter: { after: number; resolve: (checkpointId: number) => void } | undefined;
  private resolveDone: () => void = () => {};
  private rejectDone: (err: unknown) => void = () => {};
  /** Settles when the slot's tasks ended. */
  readonly done: Promise<void>;

  constructor(private readonly init: SlotRunnerInit) {
    this.slot = init.slot;
    this.epoch = init.epoch;
    this.guard = new StoppableTaskStateStore(new ObjectTaskStateStore(init.store, { checkFence: false }));
    this.done = new Promise<void>((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.done.catch(() => undefined);
  }

  /** Restores and deploys the slot's tasks; resolves once all of them opened (their state restored). */
  async start(): Promise<SlotStarted> {
    const started = performance.now();
    const { init } = this;
    const { plan, slot } = init;
    checkSlotPlan(plan, init.config.parallelism);
    const modes = edgeModes(plan, init.config.edges);
    const sinkNodes = twoPhaseCommitSinks(plan);
    const completed: CompletedCheckpointRef | undefined = init.control?.completed;
    // A trigger written before the take is aborted by the coordinator (the take changed the lease generation): it is
    // skipped. One written at the generation read after the take came after it and can still commit: the next poll
    // injects it (skipping it would stall that checkpoint until its timeout).
    const trigger = init.control?.trigger;
    this.lastTrigger = trigger !== undefined && trigger.leaseGeneration !== init.control?.leaseGeneration ? trigger.checkpointId : 0;
    this.lastCompleted = completed?.checkpointId ?? 0;
    let restored: RestoredJob | undefined;
    if (completed === undefined && init.config.restoreFrom !== undefined) {
      // The job's first run (`sluice aws init --restore`): start from that savepoint or checkpoint, at the same P.
      restored = await restoreFromDeployment(init.config.restoreFrom, plan, slot, init.config.parallelism);
      const exchangeState = restoredExchangeState(restored, slot);
      if ((exchangeState.senders ?? []).length > 0 || exchangeState.receiver !== undefined) {
        // Its sender epochs and receiver positions belong to the other deployment's exchange stream and leases.
        throw new ConfigError(
          `cannot start from ${init.config.restoreFrom}: it holds exchange state (records in flight between slots), and starting a job with exchange edges from another deployment's savepoint or checkpoint is not supported yet; deploy without --restore`,
        );
      }
    } else if (completed !== undefined) {
      try {
        const metadata = await readCompletedMetadata(init.store, completed);
        restored = await loadSlotState(this.guard, metadata, plan, slot, init.store.location);
      } catch (err) {
        // A checkpoint the job cannot read (another job, another parallelism) fails the same way at every restart.
        if (err instanceof ConfigError) throw err;
        // Loudly: falling back to an older checkpoint would replay output the sinks already committed.
        throw new SlotFailedError(slot, `cannot restore checkpoint ${completed.checkpointId}: ${message(err)}`, err);
      }
    }
    const fencing: FencingToken = { epoch: init.epoch, attempt: init.attempt ?? 0 };
    const now = init.now ?? Date.now;
    const slotTasks: TaskId[] = plan.vertices.map((v) => ({ vertex: v.id, subtask: slot }));
    const checkpoints = new SlotCheckpoints({
      slot,
      epoch: init.epoch,
      owner: init.owner,
      tasks: slotTasks,
      sinkNodes,
      store: init.store,
      acks: init.acks,
      now,
      events: {
        acked: (item) => init.events.acked(item),
        fenced: (what, id) => {
          init.events.fenced(what, id);
          this.stopNow(new LeaseLostError(slot, init.epoch, `the ${what} of checkpoint ${id} was refused`));
        },
        warn: (line) => init.events.warn(line),
      },
    });
    this.checkpoints = checkpoints;
    const hub = new CheckpointHub(this.guard, checkpoints, fencing);
    this.hub = hub;
    const acknowledge = (vertexName: string, checkpointId: number, snapshot: TaskSnapshot, syncMs: number): void => {
      checkpoints.collectCommittables(checkpointId, snapshot);
      hub.acknowledge(vertexName, checkpointId, snapshot, syncMs);
    };
    if (init.exchange !== undefined) {
      this.exchange = await SlotExchange.open({
        transport: init.exchange,
        plan,
        modes,
        slot,
        epoch: init.epoch,
        restored,
        onFailure: (err) => this.fail(err),
      });
      if (completed !== undefined) this.exchangeCompleted(completed);
    }
    const exchange = this.exchange;
    const participant: CheckpointParticipant = {
      enabled: true,
      acknowledge: (vertexName: string, checkpointId: number, snapshot: TaskSnapshot, syncMs: number) => {
        // A producing task acks once its exchange markers are written; the receiving task's snapshot holds the
        // receiver's state at the trigger.
        const state = exchange?.taskState(snapshot.vertex, checkpointId);
        if (state === undefined) {
          acknowledge(vertexName, checkpointId, snapshot, syncMs);
          return;
        }
        state.then(
          (s) => acknowledge(vertexName, checkpointId, { ...snapshot, exchange: s }, syncMs),
          (err: unknown) => this.fail(err),
        );
      },
      sourceFinished: (task) => hub.sourceFinished(task),
      completed: (id) => hub.completed(id),
      isCompleted: (id) => hub.isCompleted(id),
      finalCompleted: () => hub.finalCompleted(),
    };
    const backends: KeyedStateBackend[] = [];
    const services: KeyedServices = {
      // keyGroupOf is passed on: a kinesis-hash keyBy's state must use the hash its records were aligned with.
      createKeyedState: (range, maxParallelism, scope, keyGroupOf) => {
        const backend = init.services.createKeyedState(range, maxParallelism, scope, keyGroupOf);
        backends.push(backend);
        return backend;
      },
      createTimerService: (maxParallelism, keyed, keyGroupOf) => init.services.createTimerService(maxParallelism, keyed, keyGroupOf),
    };
    const channels = new ThreadChannelFactory(slot, new Map(), init.jobOptions.channelCapacity);
    const splits = staticSplitEnumerator(plan, await computeSplits(plan));
    const alignedSources = alignedSourceVertices(plan, modes);
    const range = keyGroupRangeForSubtask(slot, init.config.parallelism, plan.maxParallelism);
    let opened = 0;
    let allOpened: () => void = () => {};
    const running = new Promise<void>((resolve) => (allOpened = resolve));
    const setup = {
      options: init.jobOptions,
      channels,
      splits,
      services,
      clock: init.clock ?? systemClock,
      checkpoints: participant,
      fencing,
      restored,
      restoreTask: restoredSlotTask,
      sinkCommitMode: 'coordinator' as const,
      warn: (line: string) => init.events.warn(`slot ${slot}: ${line}`),
      alignedKeyGroups: (vertex: number) =>
        alignedSources.has(vertex) ? { start: range.start, end: range.end, maxParallelism: plan.maxParallelism } : undefined,
      onTaskOpened: () => {
        if (++opened === plan.vertices.length) allOpened();
      },
    };
    this.tasks = plan.vertices.map((v) => createTask(setup, plan, v, slot, wireSlotTask(plan, v, slot, modes, channels, this.exchange)));
    hub.onComplete((id) => this.tasks.forEach((t) => void t.notifyCheckpointComplete(id)));
    this.deployed = true;
    const run = runTasks(this.tasks).then(
      () => this.ended(undefined),
      (err: unknown) => this.ended(err),
    );
    if (this.failure !== undefined) for (const t of this.tasks) t.cancel(this.failure);
    await Promise.race([running, run.then(() => this.done)]);
    if (opened < plan.vertices.length) await this.done;
    return { restore: restoreKind(restored, backends), ms: Math.round(performance.now() - started), checkpointId: restored?.checkpointId };
  }

  /** Applies a poll of the control item: a new trigger is injected at the sources, a new completion delivered. */
  onControl(control: ControlItem): void {
    if (this.stopping !== undefined || !this.deployed || this.hub === undefined) return;
    const trigger = control.trigger;
    if (trigger !== undefined && trigger.checkpointId > this.lastTrigger && trigger.checkpointId > this.lastCompleted) {
      this.lastTrigger = trigger.checkpointId;
      const barrier: BarrierElement = { kind: 'barrier', checkpointId: trigger.checkpointId, timestamp: trigger.timestamp, savepoint: trigger.savepoint };
      for (const t of this.tasks) t.triggerCheckpoint(barrier);
      this.exchange?.trigger(barrier);
    }
    const completed = control.completed?.checkpointId;
    if (completed !== undefined && completed > this.lastCompleted) {
      this.lastCompleted = completed;
      this.exchangeCompleted(control.completed!);
      this.checkpoints?.completed(completed);
      this.hub.notifyComplete(completed, false);
      if (this.stopAfter !== undefined && completed > this.stopAfter.after) {
        const { resolve } = this.stopAfter;
        this.stopAfter = undefined;
        resolve(completed);
      }
    }
  }

  /**
   * Stops at the next checkpoint that completes (a handoff): resolves with its id once the slot's tasks ended and
   * their state backends closed, so the next owner can open the database at that checkpoint.
   */
  async stopAtNextCompletedCheckpoint(): Promise<number> {
    const id = await new Promise<number>((resolve) => (this.stopAfter = { after: this.lastCompleted, resolve }));
    await this.stop();
    return id;
  }

  /** Tells the exchange receiver of a completed checkpoint: it releases the records the checkpoint covers. */
  private exchangeCompleted(completed: NonNullable<ControlItem['completed']>): void {
    if (this.exchange === undefined) return;
    if (completed.slotEpochs === undefined) {
      if (!this.warnedEpochs) {
        this.warnedEpochs = true;
        this.init.events.warn(
          `slot ${this.slot}: control.completed of checkpoint ${completed.checkpointId} has no slotEpochs (written by an older coordinator): exchange records wait for a checkpoint completed by a current one`,
        );
      }
      return;
    }
    this.exchange.completed({ checkpointId: completed.checkpointId, slotEpochs: completed.slotEpochs });
  }

  /** The exchange failed under the slot: its tasks end with the error, the slot fails and restarts at a new epoch. */
  private fail(err: unknown): void {
    if (this.stopping !== undefined) return;
    // Before the tasks exist (the receiver failed while the slot was starting), the first one fails at once.
    this.failure ??= err;
    for (const t of this.tasks) t.cancel(err);
  }

  /** Stops the slot at once and writes nothing more (lease lost); does not wait. */
  stopNow(reason: Error): void {
    if (this.stopping !== undefined) return;
    this.stopping = reason;
    this.guard.stop(reason);
    void this.checkpoints?.close();
    void this.exchange?.close();
    // Stopped before its tasks were deployed (a failed restore): nothing runs that could settle `done`.
    if (this.tasks.length === 0) this.resolveDone();
    for (const t of this.tasks) t.cancel(reason);
  }

  /** Stops the slot (SIGTERM, halt, handoff) and waits until its tasks ended and their state is closed. */
  async stop(): Promise<void> {
    this.stopNow(new CancelledError(`slot ${this.slot} stopped`));
    await this.done.catch(() => undefined);
    await this.hub?.idle();
  }

  private ended(err: unknown): void {
    void this.exchange?.close();
    if (this.stopping !== undefined || err === undefined) this.resolveDone();
    else this.rejectDone(err instanceof SlotFailedError ? err : new SlotFailedError(this.slot, message(err), err));
  }
}

/**
 * Slot `slot`'s state from the deployment's `restoreFrom` (read where it is, verified). Its parallelism must be the
 * cluster's P: a slot restores only its own subtasks' state, and re-dealing key groups and splits over another P
 * is not implemented for clusters (ConfigError: every slot would fail the same way).
 */
async function restoreFromDeployment(uri: string, plan: PhysicalPlan, slot: number, parallelism: number): Promise<RestoredJob> {
  const external = await openExternalRestore(uri, plan);
  for (const v of plan.vertices) {
    const before = external.metadata.parallelism[v.id];
    if (before !== undefined && before !== parallelism) {
      throw new ConfigError(
        `cannot start from ${external.description}: it ran vertex "${v.name}" at parallelism ${before}, the cluster has ${parallelism} slots; rescaling a cluster job is not supported yet: deploy it with --parallelism ${before}, or run it with \`sluice run --restore\` at the new parallelism`,
      );
    }
  }
  return loadSlotState(external.reader, external.metadata, plan, slot, external.location);
}

/** Refuses task-state writes once the slot stopped: a stopped slot writes nothing more. */
class StoppableTaskStateStore implements TaskStateStore {
  private stopped: Error | undefined;

  constructor(private readonly inner: TaskStateStore) {}

  get location(): string {
    return this.inner.location;
  }

  get sharedState(): TaskStateStore['sharedState'] {
    return this.inner.sharedState;
  }

  stop(reason: Error): void {
    this.stopped = reason;
  }

  writeTaskState(checkpointId: number, name: string, data: Uint8Array, fencing?: FencingToken): Promise<WrittenTaskState> {
    if (this.stopped !== undefined) return Promise.reject(this.stopped);
    return this.inner.writeTaskState(checkpointId, name, data, fencing);
  }

  readTaskState(path: string, expected: { bytes: number; sha256: string }): Promise<Uint8Array> {
    return this.inner.readTaskState(path, expected);
  }
}

/** Node ids of the plan's two-phase-commit sinks; one without `externalCommit` cannot run in a cluster. */
export function twoPhaseCommitSinks(plan: PhysicalPlan): number[] {
  const nodes: number[] = [];
  for (const v of plan.vertices) {
    for (const node of v.chain) {
      if (!node.isSink) continue;
      const op = node.createOperator();
      if (!(op instanceof SinkOperator) || !isTwoPhaseCommitSink(op.sink)) continue;
      if ((op.sink as { externalCommit?: unknown }).externalCommit === undefined) {
        throw new ConfigError(
          `sink "${node.name}" commits in two phases but has no externalCommit descriptor: in a cluster the coordinator commits sinks without the job's code, so only sinks with one (the DynamoDB sink) can run there`,
        );
      }
      nodes.push(node.id);
    }
  }
  return nodes;
}

/**
 * Source vertices whose output goes through an aligned edge and that can read a key-group range: their readers keep
 * only the slot's key groups. (Any other source behind an aligned edge fails the slot at its first record of another
 * slot's key group: KeyGroupMismatchError.)
 */
function alignedSourceVertices(plan: PhysicalPlan, modes: ReadonlyMap<number, { readonly mode: string }>): Set<number> {
  return new Set(
    plan.edges
      .filter((e) => modes.get(e.id)?.mode === 'aligned' && plan.vertices[e.fromVertex]?.source?.source.supportsKeyGroupAlignment === true)
      .map((e) => e.fromVertex),
  );
}

function restoreKind(restored: RestoredJob | undefined, backends: readonly KeyedStateBackend[]): RestoreKind {
  if (restored === undefined) return 'fresh';
  const counts = backends
    .map((b) => (b as { metrics?: () => { localRecoveries?: number; fileRestores?: number } }).metrics?.())
    .filter((m): m is { localRecoveries: number; fileRestores: number } => typeof m?.localRecoveries === 'number' && typeof m.fileRestores === 'number')
    .filter((m) => m.localRecoveries + m.fileRestores > 0);
  return counts.length > 0 && counts.every((m) => m.localRecoveries > 0) ? 'local' : 's3';
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
