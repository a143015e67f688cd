import { InternalError, type BarrierElement } from '../../core/index.ts';
import { CheckpointCoordinator, type CoordinatorStep } from '../../checkpoint/coordinator.ts';
import type { CheckpointCoordinatorOptions } from '../../checkpoint/coordinator-options.ts';
import type { CheckpointHistoryEntry, CoordinatorCommand } from '../../checkpoint/coordinator-protocol.ts';
import type { CheckpointMetadata, OperatorStateRecord, TaskId, TaskStateHandle } from '../../checkpoint/types.ts';
import type { CheckpointStorage, TaskStateReader } from '../../storage/checkpoint-storage.ts';
import { JobNotRunningError, SavepointFailedError } from '../control/control-errors.ts';
import type { CoordinatorLink } from './checkpoint-hub.ts';
import { crashPoint } from '../../core/fault-injection.ts';
import { CheckpointingFailedError } from './checkpointing-failed-error.ts';
import { RateLimitedLog } from '../logging/rate-limited-log.ts';

/** SLUICE_TRACE_CHECKPOINTS=1 logs every coordinator command (for diagnosing stuck checkpoints). */
const TRACE = process.env['SLUICE_TRACE_CHECKPOINTS'] === '1';

/** Where the driver sends what the coordinator decided: to every task (in this thread or through workers). */
export interface TaskDispatch {
  trigger(barrier: BarrierElement): void;
  notifyComplete(checkpointId: number, final: boolean): void;
}

/** Where savepoints are written (FileSavepointStorage): copies the task files listed, returns the savepoint's path. */
export interface SavepointWriter {
  write(metadata: CheckpointMetadata, source: TaskStateReader): Promise<string>;
}

/** A complete savepoint. */
export interface SavepointResult {
  readonly checkpointId: number;
  /** Absolute path of its self-contained directory. */
  readonly path: string;
}

/** A history entry with the directory of a completed savepoint. */
export interface DriverHistoryEntry extends CheckpointHistoryEntry {
  readonly path: string | undefined;
}

interface SavepointWaiter {
  readonly stop: boolean;
  resolve(result: SavepointResult): void;
  reject(reason: Error): void;
}

export interface EmbeddedDriverInit {
  readonly options: CheckpointCoordinatorOptions;
  readonly storage: CheckpointStorage;
  readonly tasks: readonly TaskId[];
  readonly sourceTasks: readonly TaskId[];
  readonly maxParallelism: number;
  readonly lastCheckpointId: number;
  readonly retainedCheckpointIds: readonly number[];
  readonly dispatch: TaskDispatch;
  readonly log: (line: string) => void;
  readonly now?: () => number;
  /** How often a repeated warning (the same abort reason again) is printed at most. @default 5000 */
  readonly warningIntervalMs?: number;
  /** Where savepoints go; without it, savepoints cannot be taken. */
  readonly savepoints?: SavepointWriter;
  /**
   * Runs once the savepoint of a stop is complete, before the sinks are told to commit it: records that the
   * checkpoint folder's job continues from the savepoint. If it fails, the job is not stopped.
   */
  readonly beforeStop?: (savepoint: SavepointResult) => Promise<void>;
  /** History and savepoint paths of the previous attempt of the same run (`historyState`, `savepointPaths`). */
  readonly history?: readonly CheckpointHistoryEntry[];
  readonly savepointPaths?: ReadonlyMap<number, string>;
  /** What each operator's state means (operatorStateRecords of the plan), recorded in every checkpoint. */
  readonly operators?: readonly OperatorStateRecord[];
}

/**
 * Drives the pure checkpoint coordinator in the embedded runner: a timer for `tick`, storage for metadata and
 * cleanup, and a dispatch to the tasks. Events are applied one at a time, in arrival order.
 */
export class EmbeddedCheckpointDriver implements CoordinatorLink {
  private coordinator: CheckpointCoordinator;
  private queue: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly finishedSources = new Set<string>();
  private readonly now: () => number;
  /** Savepoint requests not yet numbered by the coordinator, then by request id, and request ids by checkpoint id. */
  private readonly unnumbered = new Set<SavepointWaiter>();
  private readonly savepointRequests = new Map<number, SavepointWaiter>();
  private readonly requestOfCheckpoint = new Map<number, number>();
  private readonly paths: Map<number, string>;
  /** The savepoint a stop completed with; the driver has halted. */
  private stoppedWith: SavepointResult | undefined;
  private readonly warnings: RateLimitedLog;
  private failWith: (err: Error) => void = () => {};
  /**
   * Rejects once checkpointing fails the job: more consecutive checkpoints failed than tolerated
   * (CheckpointingFailedError), or the driver itself broke. Never resolves. The runner fails the attempt with it.
   */
  readonly failed: Promise<never>;

  constructor(private readonly init: EmbeddedDriverInit) {
    this.now = init.now ?? Date.now;
    this.warnings = new RateLimitedLog(init.log, { now: this.now, intervalMs: init.warningIntervalMs });
    this.failed = new Promise<never>((_, reject) => (this.failWith = reject));
    // A runner that ends before anything failed never looks at it.
    this.failed.catch(() => undefined);
    this.coordinator = CheckpointCoordinator.start(init.options, {
      tasks: init.tasks,
      maxParallelism: init.maxParallelism,
      now: this.now(),
      lastCheckpointId: init.lastCheckpointId,
      retainedCheckpointIds: init.retainedCheckpointIds,
      history: init.history,
      ...(init.operators === undefined ? {} : { operators: init.operators }),
    });
    this.paths = new Map(init.savepointPaths);
    this.schedule();
  }

  /**
   * Takes a savepoint now, or once the checkpoint in flight ended; resolves with its directory once complete.
   * With `stop`, the driver then delivers its completion to the tasks and stops: no later checkpoint is triggered
   * or completed, so the savepoint is exactly what the sinks have committed, and the runner may end the job.
   * Rejects with JobNotRunningError when no savepoint can be taken, or SavepointFailedError when it failed.
   */
  triggerSavepoint(options: { stop?: boolean } = {}): Promise<SavepointResult> {
    return new Promise((resolve, reject) => {
      if (this.stopped) {
        reject(new JobNotRunningError('the job is not running (it is restarting or has ended)'));
        return;
      }
      if (this.init.savepoints === undefined) {
        reject(new InternalError('this runner takes no savepoints (no savepoint storage)'));
        return;
      }
      const waiter: SavepointWaiter = { stop: options.stop === true, resolve, reject };
      this.unnumbered.add(waiter);
      this.apply((c, now) => {
        const step = c.triggerSavepoint(now);
        this.unnumbered.delete(waiter);
        this.savepointRequests.set(step.requestId, waiter);
        return step;
      });
    });
  }

  /** Newest first, with the directories of completed savepoints. */
  history(): DriverHistoryEntry[] {
    return this.coordinator.history().map((e) => ({ ...e, path: this.paths.get(e.checkpointId) }));
  }

  /** Oldest first, as the next attempt's driver takes it (`init.history`). */
  get historyState(): readonly CheckpointHistoryEntry[] {
    return this.coordinator.state.history;
  }

  get savepointPaths(): ReadonlyMap<number, string> {
    return this.paths;
  }

  /** Set once a stop's savepoint is complete and its completion went to the tasks: the job may end. */
  get stoppedWithSavepoint(): SavepointResult | undefined {
    return this.stoppedWith;
  }

  /** The highest checkpoint id used; a restarted attempt continues after it. */
  get lastCheckpointId(): number {
    return this.coordinator.lastCheckpointId;
  }

  ack(checkpointId: number, handle: TaskStateHandle): void {
    if (TRACE) this.init.log(`checkpoint coordinator: ack ${checkpointId} from ${handle.task.vertex}/${handle.task.subtask}`);
    this.apply((c, now) => c.ack(checkpointId, handle, now));
  }

  decline(checkpointId: number, task: TaskId, reason: string): void {
    this.apply((c, now) => c.abort(checkpointId, `task ${task.vertex}/${task.subtask} declined: ${reason}`, now));
  }

  sourceFinished(task: TaskId): void {
    if (TRACE) this.init.log(`checkpoint coordinator: source ${task.vertex}/${task.subtask} finished`);
    this.finishedSources.add(`${task.vertex}/${task.subtask}`);
    if (this.finishedSources.size === this.init.sourceTasks.length) this.apply((c, now) => c.allSourcesFinished(now));
  }

  /** Stops triggering; commands of an event already being applied still run. Pending savepoints are rejected. */
  async stop(): Promise<void> {
    this.halt();
    await this.queue;
    this.rejectAllSavepoints();
    this.warnings.flush();
  }

  private halt(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    // Events already queued must not run: after a stop-with-savepoint, nothing may complete after the savepoint.
    this.rejectAllSavepoints();
  }

  private rejectAllSavepoints(): void {
    const waiters = [...this.unnumbered, ...this.savepointRequests.values()];
    this.unnumbered.clear();
    this.savepointRequests.clear();
    for (const w of waiters) w.reject(new JobNotRunningError('the job stopped or is restarting before the savepoint was taken'));
  }

  private takeWaiter(checkpointId: number): SavepointWaiter | undefined {
    const requestId = this.requestOfCheckpoint.get(checkpointId);
    if (requestId === undefined) return undefined;
    this.requestOfCheckpoint.delete(checkpointId);
    const waiter = this.savepointRequests.get(requestId);
    this.savepointRequests.delete(requestId);
    return waiter;
  }

  /** A checkpoint's metadata into checkpoint storage; a savepoint's files and metadata into its own directory. */
  private async commit(metadata: CheckpointMetadata): Promise<void> {
    if (!metadata.savepoint) {
      await this.init.storage.commitMetadata(metadata);
      return;
    }
    if (this.init.savepoints === undefined) throw new InternalError('a savepoint completed but this runner has no savepoint storage');
    this.paths.set(metadata.checkpointId, await this.init.savepoints.write(metadata, this.init.storage));
    // The tasks wrote the savepoint's state as checkpoint files; the savepoint has its own copies now.
    await this.init.storage.discard(metadata.checkpointId).catch((err: unknown) => {
      this.init.log(`warning: could not remove the staging files of savepoint ${metadata.checkpointId}: ${err instanceof Error ? err.message : String(err)}`);
    });
  }

  /**
   * Carries out what follows a commit. As in Flink, only checkpoints and the savepoint of a stop are delivered to
   * the tasks: sinks commit what an intermediate savepoint covers with the next checkpoint, so that recovery, which
   * never starts from a savepoint, cannot replay what a sink already committed. A stop halts right after its
   * savepoint's completion is delivered.
   */
  private async afterCommit(metadata: CheckpointMetadata, commands: readonly CoordinatorCommand[]): Promise<void> {
    if (!metadata.savepoint) {
      await this.execute(commands);
      return;
    }
    const waiter = this.takeWaiter(metadata.checkpointId);
    const result = { checkpointId: metadata.checkpointId, path: this.paths.get(metadata.checkpointId) ?? '' };
    const notify = commands.findIndex((c) => c.kind === 'notifyComplete');
    const withoutNotify = commands.filter((c) => c.kind !== 'notifyComplete');
    if (waiter?.stop !== true || notify < 0) {
      await this.execute(withoutNotify);
      if (waiter?.stop === true) waiter.reject(new JobNotRunningError(`savepoint ${result.path} was taken, but the job is failing and was not stopped with it`));
      else waiter?.resolve(result);
      return;
    }
    try {
      await this.init.beforeStop?.(result);
    } catch (err) {
      await this.execute(withoutNotify);
      const reason = err instanceof Error ? err.message : String(err);
      waiter.reject(new SavepointFailedError(`savepoint ${result.path} was taken, but the job was not stopped: ${reason}`, err));
      return;
    }
    await this.execute(commands.slice(0, notify + 1));
    this.stoppedWith = result;
    this.halt();
    waiter.resolve(result);
  }

  private apply(event: (c: CheckpointCoordinator, now: number) => CoordinatorStep): void {
    this.queue = this.queue
      .then(async () => {
        if (this.stopped) return;
        const step = event(this.coordinator, this.now());
        this.coordinator = step.coordinator;
        await this.execute(step.commands);
        this.schedule();
      })
      .catch((err: unknown) => {
        // The coordinator's state no longer matches what was carried out: stop rather than hang or guess.
        this.init.log(`checkpoint coordinator error: ${err instanceof Error ? err.message : String(err)}`);
        this.halt();
        this.failWith(err instanceof Error ? err : new InternalError(String(err)));
      });
  }

  private async execute(commands: readonly CoordinatorCommand[]): Promise<void> {
    for (const command of commands) {
      if (TRACE) this.init.log(`checkpoint coordinator: ${JSON.stringify(command.kind === 'commitMetadata' ? { kind: command.kind, checkpointId: command.metadata.checkpointId } : command)}`);
      switch (command.kind) {
        case 'trigger':
          if (command.savepointRequestId !== undefined) this.requestOfCheckpoint.set(command.checkpointId, command.savepointRequestId);
          this.init.dispatch.trigger({
            kind: 'barrier',
            checkpointId: command.checkpointId,
            timestamp: command.timestamp,
            savepoint: command.savepoint,
          });
          break;
        case 'commitMetadata':
          try {
            await this.commit(command.metadata);
          } catch (err) {
            const reason = `writing the metadata failed: ${err instanceof Error ? err.message : String(err)}`;
            const step = this.coordinator.abort(command.metadata.checkpointId, reason, this.now());
            this.coordinator = step.coordinator;
            await this.execute(step.commands);
            break;
          }
          crashPoint('after-metadata-commit');
          {
            const step = this.coordinator.metadataCommitted(command.metadata.checkpointId, this.now());
            this.coordinator = step.coordinator;
            await this.afterCommit(command.metadata, step.commands);
          }
          break;
        case 'notifyComplete':
          this.init.dispatch.notifyComplete(command.checkpointId, command.final);
          break;
        case 'abort':
          this.warnings.warn(`checkpoint ${command.checkpointId} aborted: ${command.reason}`);
          this.takeWaiter(command.checkpointId)?.reject(new SavepointFailedError(`savepoint (checkpoint ${command.checkpointId}) failed: ${command.reason}`));
          await this.discard(command.checkpointId);
          break;
        case 'discard':
          for (const id of command.checkpointIds) await this.discard(id);
          break;
        case 'failJob':
          this.halt();
          this.failWith(new CheckpointingFailedError(command));
          break;
        case 'savepointRejected':
          this.init.log(`savepoint request ${command.requestId} rejected: ${command.reason}`);
          this.savepointRequests.get(command.requestId)?.reject(new JobNotRunningError(`no savepoint was taken: ${command.reason}`));
          this.savepointRequests.delete(command.requestId);
          break;
      }
    }
  }

  /**
   * Removes a checkpoint's files. Failing storage may refuse that too; what is left is an incomplete or old
   * checkpoint, which the next start (removeIncomplete) or a later retention pass removes.
   */
  private async discard(checkpointId: number): Promise<void> {
    try {
      await this.init.storage.discard(checkpointId);
    } catch (err) {
      this.warnings.warn(`warning: could not remove checkpoint ${checkpointId}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const now = this.now();
    const at = this.coordinator.nextWakeup(now);
    if (at === undefined) return;
    this.timer = setTimeout(() => this.apply((c, t) => c.tick(t)), Math.max(0, at - now));
    // The coordinator's timer alone must not keep the process alive once the job has ended.
    this.timer.unref();
  }
}
