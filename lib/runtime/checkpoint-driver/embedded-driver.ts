import { InternalError, type BarrierElement } from '../../core/index.ts';
import { FencedError, type FencingToken } from '../../core/fencing.ts';
import { CheckpointCoordinator, type CoordinatorStep, type FencedStep } from '../../checkpoint/coordinator.ts';
import type { CheckpointCoordinatorOptions } from '../../checkpoint/coordinator-options.ts';
import type { CheckpointHistoryEntry, CoordinatorCommand } from '../../checkpoint/coordinator-protocol.ts';
import type { CheckpointMetadata, OperatorStateRecord, TaskId, TaskStateHandle } from '../../checkpoint/types.ts';
import type { CheckpointStorage, TaskStateReader } from '../../storage/checkpoint-storage.ts';
import { JobNotRunningError, SavepointFailedError } from '../control/control-errors.ts';
import type { CheckpointDriver, DriverHistoryEntry, SavepointResult } from './checkpoint-driver.ts';
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

export type { DriverHistoryEntry, SavepointResult } from './checkpoint-driver.ts';

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
  /**
   * The fencing token of this attempt: recorded in every checkpoint's metadata; acks and declines carrying an older
   * epoch are refused and logged. @default none (nothing fenced or recorded)
   */
  readonly fencing?: FencingToken;
}

/**
 * Drives the pure checkpoint coordinator in the embedded runner: a timer for `tick`, storage for metadata, savepoints
 * and cleanup, and a dispatch to the tasks. Events are applied one at a time, in arrival order. Every decision
 * (what to notify, when to halt, which sources are done, fencing) is the coordinator's: this class only carries out
 * its commands and answers savepoint requests.
 */
export class EmbeddedCheckpointDriver implements CheckpointDriver {
  private coordinator: CheckpointCoordinator;
  private queue: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly now: () => number;
  /** Savepoint requests not yet numbered by the coordinator, then by request id. */
  private readonly unnumbered = new Set<SavepointWaiter>();
  private readonly savepointRequests = new Map<number, SavepointWaiter>();
  private readonly paths: Map<number, string>;
  /** Why recording the stop failed, as the cause of the stop request's rejection. */
  private prepareStopError: unknown;
  /** The savepoint a stop completed with; the driver has halted. */
  private stoppedWith: SavepointResult | undefined;
  private readonly warnings: RateLimitedLog;
  private failWith: (err: Error) => void = () => {};
  readonly failed: Promise<never>;

  constructor(private readonly init: EmbeddedDriverInit) {
    this.now = init.now ?? Date.now;
    this.warnings = new RateLimitedLog(init.log, { now: this.now, intervalMs: init.warningIntervalMs });
    this.failed = new Promise<never>((_, reject) => (this.failWith = reject));
    // A runner that ends before anything failed never looks at it.
    this.failed.catch(() => undefined);
    this.coordinator = CheckpointCoordinator.start(init.options, {
      tasks: init.tasks,
      sourceTasks: init.sourceTasks,
      maxParallelism: init.maxParallelism,
      now: this.now(),
      lastCheckpointId: init.lastCheckpointId,
      retainedCheckpointIds: init.retainedCheckpointIds,
      history: init.history,
      ...(init.operators === undefined ? {} : { operators: init.operators }),
      ...(init.fencing === undefined ? {} : { fencing: init.fencing }),
    });
    this.paths = new Map(init.savepointPaths);
    this.schedule();
  }

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
        const step = c.triggerSavepoint(now, { stop: waiter.stop });
        this.unnumbered.delete(waiter);
        this.savepointRequests.set(step.requestId, waiter);
        return step;
      });
    });
  }

  history(): DriverHistoryEntry[] {
    return this.coordinator.history().map((e) => ({ ...e, path: this.paths.get(e.checkpointId) }));
  }

  get historyState(): readonly CheckpointHistoryEntry[] {
    return this.coordinator.state.history;
  }

  get savepointPaths(): ReadonlyMap<number, string> {
    return this.paths;
  }

  get stoppedWithSavepoint(): SavepointResult | undefined {
    return this.stoppedWith;
  }

  get lastCheckpointId(): number {
    return this.coordinator.lastCheckpointId;
  }

  ack(checkpointId: number, handle: TaskStateHandle, token?: FencingToken): void {
    if (TRACE) this.init.log(`checkpoint coordinator: ack ${checkpointId} from ${handle.task.vertex}/${handle.task.subtask}`);
    this.apply((c, now) => c.ack(checkpointId, handle, now, token));
  }

  decline(checkpointId: number, task: TaskId, reason: string, token?: FencingToken): void {
    this.apply((c, now) => c.decline(checkpointId, task, reason, now, token));
  }

  sourceFinished(task: TaskId): void {
    if (TRACE) this.init.log(`checkpoint coordinator: source ${task.vertex}/${task.subtask} finished`);
    this.apply((c, now) => c.sourceFinished(task, now));
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

  private takeWaiter(requestId: number): SavepointWaiter | undefined {
    const waiter = this.savepointRequests.get(requestId);
    this.savepointRequests.delete(requestId);
    return waiter;
  }

  private savepointResult(checkpointId: number): SavepointResult {
    return { checkpointId, path: this.paths.get(checkpointId) ?? '' };
  }

  /** A savepoint's files and metadata into its own directory; the staging files in checkpoint storage go. */
  private async writeSavepoint(metadata: CheckpointMetadata): Promise<void> {
    if (this.init.savepoints === undefined) throw new InternalError('a savepoint completed but this runner has no savepoint storage');
    this.paths.set(metadata.checkpointId, await this.init.savepoints.write(metadata, this.init.storage));
    // The tasks wrote the savepoint's state as checkpoint files; the savepoint has its own copies now.
    await this.init.storage.discard(metadata.checkpointId).catch((err: unknown) => {
      if (err instanceof FencedError) throw err;
      this.init.log(`warning: could not remove the staging files of savepoint ${metadata.checkpointId}: ${message(err)}`);
    });
  }

  private apply(event: (c: CheckpointCoordinator, now: number) => CoordinatorStep & FencedStep): void {
    this.queue = this.queue
      .then(async () => {
        if (this.stopped) return;
        const step = event(this.coordinator, this.now());
        if (step.refused !== undefined) {
          this.warnings.warn(`warning: ${new FencedError('the checkpoint coordinator', step.refused.current, step.refused.offered).message}`);
        }
        await this.follow(step);
        this.schedule();
      })
      .catch((err: unknown) => {
        // The coordinator's state no longer matches what was carried out, or a newer attempt fenced the storage:
        // stop rather than hang, guess or clean up what is no longer this attempt's.
        this.init.log(err instanceof FencedError ? `checkpoint coordinator fenced: ${err.message}` : `checkpoint coordinator error: ${message(err)}`);
        this.halt();
        this.failWith(err instanceof Error ? err : new InternalError(String(err)));
      });
  }

  /** Takes the step's coordinator and carries out its commands (which may report further events). */
  private async follow(step: CoordinatorStep): Promise<void> {
    this.coordinator = step.coordinator;
    await this.execute(step.commands);
  }

  private async execute(commands: readonly CoordinatorCommand[]): Promise<void> {
    for (const command of commands) {
      if (TRACE) this.init.log(`checkpoint coordinator: ${JSON.stringify('metadata' in command ? { kind: command.kind, checkpointId: command.metadata.checkpointId } : command)}`);
      switch (command.kind) {
        case 'trigger':
          this.init.dispatch.trigger({
            kind: 'barrier',
            checkpointId: command.checkpointId,
            timestamp: command.timestamp,
            savepoint: command.savepoint,
          });
          break;
        case 'commitMetadata':
        case 'writeSavepoint': {
          const id = command.metadata.checkpointId;
          try {
            if (command.kind === 'commitMetadata') await this.init.storage.commitMetadata(command.metadata);
            else await this.writeSavepoint(command.metadata);
          } catch (err) {
            // A newer attempt owns the storage: this one must stop, and must not clean up. Its abort would discard
            // checkpoint `id`, which may be the new owner's checkpoint of the same id.
            if (err instanceof FencedError) throw err;
            await this.follow(this.coordinator.abort(id, `writing the metadata failed: ${message(err)}`, this.now()));
            break;
          }
          crashPoint('after-metadata-commit');
          await this.follow(this.coordinator.metadataCommitted(id, this.now()));
          break;
        }
        case 'notifyComplete':
          this.init.dispatch.notifyComplete(command.checkpointId, command.final);
          break;
        case 'savepointComplete':
          this.takeWaiter(command.requestId)?.resolve(this.savepointResult(command.checkpointId));
          break;
        case 'savepointFailed':
          this.takeWaiter(command.requestId)?.reject(new SavepointFailedError(`savepoint (checkpoint ${command.checkpointId}) failed: ${command.reason}`));
          break;
        case 'prepareStop': {
          const id = command.checkpointId;
          try {
            await this.init.beforeStop?.(this.savepointResult(id));
          } catch (err) {
            this.prepareStopError = err;
            await this.follow(this.coordinator.stopFailed(id, message(err), this.now()));
            break;
          }
          await this.follow(this.coordinator.stopPrepared(id, this.now()));
          break;
        }
        case 'savepointNotStopped': {
          const { path } = this.savepointResult(command.checkpointId);
          const waiter = this.takeWaiter(command.requestId);
          if (command.why === 'jobFailing') {
            waiter?.reject(new JobNotRunningError(`savepoint ${path} was taken, but the job is failing and was not stopped with it`));
          } else {
            const cause = this.prepareStopError;
            this.prepareStopError = undefined;
            waiter?.reject(new SavepointFailedError(`savepoint ${path} was taken, but the job was not stopped: ${command.reason}`, cause));
          }
          break;
        }
        case 'halt': {
          const waiter = this.takeWaiter(command.requestId);
          this.stoppedWith = this.savepointResult(command.checkpointId);
          this.halt();
          waiter?.resolve(this.stoppedWith);
          break;
        }
        case 'abort':
          this.warnings.warn(`checkpoint ${command.checkpointId} aborted: ${command.reason}`);
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
          this.takeWaiter(command.requestId)?.reject(new JobNotRunningError(`no savepoint was taken: ${command.reason}`));
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
      // The storage refused because a newer attempt fenced it (it deleted nothing): this attempt is a zombie.
      if (err instanceof FencedError) throw err;
      this.warnings.warn(`warning: could not remove checkpoint ${checkpointId}: ${message(err)}`);
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

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
