import type { BarrierElement } from '../../core/index.ts';
import { CheckpointCoordinator, type CoordinatorStep } from '../../checkpoint/coordinator.ts';
import type { CheckpointCoordinatorOptions } from '../../checkpoint/coordinator-options.ts';
import type { CoordinatorCommand } from '../../checkpoint/coordinator-protocol.ts';
import type { TaskId, TaskStateHandle } from '../../checkpoint/types.ts';
import type { CheckpointStorage } from '../../storage/checkpoint-storage.ts';
import type { CoordinatorLink } from './checkpoint-hub.ts';

/** SLUICE_TRACE_CHECKPOINTS=1 logs every coordinator command (for diagnosing stuck checkpoints). */
const TRACE = process.env['SLUICE_TRACE_CHECKPOINTS'] === '1';

/** Where the driver sends what the coordinator decided: to every task (in this thread or through workers). */
export interface TaskDispatch {
  trigger(barrier: BarrierElement): void;
  notifyComplete(checkpointId: number, final: boolean): void;
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

  constructor(private readonly init: EmbeddedDriverInit) {
    this.now = init.now ?? Date.now;
    this.coordinator = CheckpointCoordinator.start(init.options, {
      tasks: init.tasks,
      maxParallelism: init.maxParallelism,
      now: this.now(),
      lastCheckpointId: init.lastCheckpointId,
      retainedCheckpointIds: init.retainedCheckpointIds,
    });
    this.schedule();
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

  /** Stops triggering; commands of an event already being applied still run. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.queue;
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
      .catch((err: unknown) => this.init.log(`checkpoint coordinator error: ${err instanceof Error ? err.message : String(err)}`));
  }

  private async execute(commands: readonly CoordinatorCommand[]): Promise<void> {
    for (const command of commands) {
      if (TRACE) this.init.log(`checkpoint coordinator: ${JSON.stringify(command.kind === 'commitMetadata' ? { kind: command.kind, checkpointId: command.metadata.checkpointId } : command)}`);
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
          try {
            await this.init.storage.commitMetadata(command.metadata);
          } catch (err) {
            const reason = `writing the metadata failed: ${err instanceof Error ? err.message : String(err)}`;
            const step = this.coordinator.abort(command.metadata.checkpointId, reason, this.now());
            this.coordinator = step.coordinator;
            await this.execute(step.commands);
            break;
          }
          {
            const step = this.coordinator.metadataCommitted(command.metadata.checkpointId, this.now());
            this.coordinator = step.coordinator;
            await this.execute(step.commands);
          }
          break;
        case 'notifyComplete':
          this.init.dispatch.notifyComplete(command.checkpointId, command.final);
          break;
        case 'abort':
          this.init.log(`checkpoint ${command.checkpointId} aborted: ${command.reason}`);
          await this.init.storage.discard(command.checkpointId);
          break;
        case 'discard':
          for (const id of command.checkpointIds) await this.init.storage.discard(id);
          break;
        case 'savepointRejected':
          this.init.log(`savepoint request ${command.requestId} rejected: ${command.reason}`);
          break;
      }
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
