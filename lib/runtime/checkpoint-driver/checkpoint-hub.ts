import type { SharedFileEntry, TaskId } from '../../checkpoint/types.ts';
import { isFileKeyedStateSnapshot, isPendingKeyedSnapshot, type SharedStateStore } from '../../state/index.ts';
import { taskStateFileName } from '../../checkpoint/naming.ts';
import type { TaskStateStore } from '../../storage/checkpoint-storage.ts';
import { encodeTaskSnapshot } from '../../storage/task-state-codec.ts';
import type { TaskSnapshot } from '../../storage/task-snapshot.ts';
import { yieldToEventLoop } from '../yield.ts';
import type { FencingToken } from '../../core/fencing.ts';
import type { CheckpointParticipant } from './participant.ts';
import type { CoordinatorLink } from './checkpoint-driver.ts';
import { crashPoint } from '../../core/fault-injection.ts';

export type { CoordinatorLink } from './checkpoint-driver.ts';

/**
 * The checkpoint side of one thread: writes its tasks' snapshots (the asynchronous phase, off the task loop),
 * acknowledges them, and hands completion notifications to its tasks.
 */
export class CheckpointHub implements CheckpointParticipant {
  readonly enabled = true;
  private completedUpTo = Number.NEGATIVE_INFINITY;
  private finalDone = false;
  private waiters: { id: number; resolve: () => void }[] = [];
  private readonly listeners: ((checkpointId: number) => void)[] = [];
  /** Encoded size of each task's previous snapshot (by file name): the next one is usually about as large. */
  private readonly lastBytes = new Map<string, number>();
  /** Asynchronous phases still running (a failed attempt waits for them before its checkpoints are cleaned up). */
  private readonly writing = new Set<Promise<void>>();

  constructor(
    private readonly storage: TaskStateStore,
    private readonly link: CoordinatorLink,
    /** The attempt's fencing token, sent with every ack and decline. @default none (a link that cannot be stale) */
    private readonly token?: FencingToken,
  ) {}

  acknowledge(vertexName: string, checkpointId: number, snapshot: TaskSnapshot, syncMs: number): void {
    const task = { vertex: snapshot.vertex, subtask: snapshot.subtask };
    const name = taskStateFileName(task);
    const started = performance.now();
    const write = (async () => {
      try {
        // The task returns to its input before the encoding starts. The copy stays valid meanwhile: it owns its
        // containers and shares only values, which must not be mutated once in state (MemoryKeyedStateBackend).
        await yieldToEventLoop();
        const { snapshot: complete, sharedFiles } = await completeKeyedSnapshots(snapshot, this.storage.sharedState);
        const data = encodeTaskSnapshot(complete, { sizeHint: this.lastBytes.get(name) });
        this.lastBytes.set(name, data.byteLength);
        const written = await this.storage.writeTaskState(checkpointId, name, data, this.token);
        crashPoint('after-task-state-written');
        this.link.ack(checkpointId, {
          task,
          vertexName,
          ...written,
          syncMs: roundMs(syncMs),
          asyncMs: roundMs(performance.now() - started),
          ...(sharedFiles.length > 0 ? { sharedFiles } : {}),
        }, this.token);
      } catch (err) {
        this.link.decline(checkpointId, task, err instanceof Error ? err.message : String(err), this.token);
      }
    })();
    this.writing.add(write);
    void write.finally(() => this.writing.delete(write));
  }

  /** Resolves once every asynchronous phase started so far has written its files or given up. */
  async idle(): Promise<void> {
    while (this.writing.size > 0) await Promise.allSettled([...this.writing]);
  }

  sourceFinished(task: TaskId): void {
    this.link.sourceFinished(task);
  }

  /** Tasks register to receive completion notifications (they run them from their mailbox). */
  onComplete(listener: (checkpointId: number) => void): void {
    this.listeners.push(listener);
  }

  /** The coordinator says checkpoint `checkpointId` is complete. */
  notifyComplete(checkpointId: number, final: boolean): void {
    for (const l of this.listeners) l(checkpointId);
    if (final) this.finalDone = true;
    if (checkpointId > this.completedUpTo) this.completedUpTo = checkpointId;
    const ready = this.waiters.filter((w) => w.id <= checkpointId);
    this.waiters = this.waiters.filter((w) => w.id > checkpointId);
    for (const w of ready) w.resolve();
  }

  finalCompleted(): boolean {
    return this.finalDone;
  }

  isCompleted(checkpointId: number): boolean {
    return checkpointId <= this.completedUpTo;
  }

  completed(checkpointId: number): Promise<void> {
    if (this.isCompleted(checkpointId)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ id: checkpointId, resolve }));
  }
}

/**
 * Runs the asynchronous phase of file-based keyed state (writes its new files into the shared area) and lists every
 * shared file the task's state refers to, for the metadata's reference counting.
 */
async function completeKeyedSnapshots(
  snapshot: TaskSnapshot,
  store: SharedStateStore,
): Promise<{ snapshot: TaskSnapshot; sharedFiles: SharedFileEntry[] }> {
  const sharedFiles = new Map<string, SharedFileEntry>();
  const operators = [];
  for (const op of snapshot.operators) {
    const keyed = isPendingKeyedSnapshot(op.keyed) ? await op.keyed.complete(store) : op.keyed;
    if (keyed !== undefined && isFileKeyedStateSnapshot(keyed)) {
      for (const f of keyed.files) sharedFiles.set(f.path, { path: f.path, bytes: f.bytes, sha256: f.sha256 });
    }
    operators.push(keyed === op.keyed ? op : { ...op, keyed });
  }
  return { snapshot: { ...snapshot, operators }, sharedFiles: [...sharedFiles.values()] };
}

/** Microsecond precision is plenty for phase durations in metadata. */
function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
