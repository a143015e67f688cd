import { parseTaskStateFileName, parseTaskStatePath, taskStatePath } from '../checkpoint/naming.ts';
import { InternalError, assertNotFenced, type FencingToken } from '../core/index.ts';
import type { TaskStateStore, WrittenTaskState } from './checkpoint-storage.ts';
import { CheckpointCorruptError, CheckpointIoError } from './errors.ts';
import { FenceRecords } from './fence-records.ts';
import { sha256Hex } from './fs/durable-fs.ts';
import type { ObjectStore } from './object-store.ts';
import { ObjectSharedState } from './object-shared-state.ts';
import { readVerifiedObject } from './verified-object.ts';

/**
 * The task side of checkpoint storage over an object store: task state files at `chk-<id>/task-<v>-<s>.state`
 * (`chk-<id>/task-<v>-<s>-e<epoch>.state` when fenced) and the shared area. A fenced write reads the recorded epoch
 * once per checkpoint id (all the tasks writing through this store share that read), never per record. That read
 * can be stale by the time the file is written (a newer attempt fences in between); the epoch in the file name is
 * what keeps such a late write from replacing the newer attempt's file of the same checkpoint id.
 */
export class ObjectTaskStateStore implements TaskStateStore {
  readonly location: string;
  readonly sharedState: ObjectSharedState;
  private readonly fences: FenceRecords;
  private fenceRead: { readonly checkpointId: number; readonly current: Promise<FencingToken | undefined> } | undefined;

  /**
   * `checkFence: false` for a cluster slot: its epoch is fenced by the control table's lease conditions, not by the
   * job-wide fence record, which it must neither read nor depend on; files still carry the epoch in their names.
   * @default checkFence true
   */
  constructor(
    private readonly store: ObjectStore,
    private readonly options: { readonly checkFence?: boolean } = {},
  ) {
    this.location = store.location;
    this.sharedState = new ObjectSharedState(store);
    this.fences = new FenceRecords(store);
  }

  async writeTaskState(checkpointId: number, name: string, data: Uint8Array, fencing?: FencingToken): Promise<WrittenTaskState> {
    const task = parseTaskStateFileName(name);
    if (task === undefined) {
      throw new InternalError(`"${name}" is not a task state file name (expected task-<vertex>-<subtask>.state)`);
    }
    const path = taskStatePath({ kind: 'checkpoint', checkpointId }, task, fencing?.epoch);
    if (fencing !== undefined && this.options.checkFence !== false) assertNotFenced(`checkpoint storage ${this.location}`, await this.recordedFence(checkpointId), fencing);
    const sha256 = await sha256Hex(data);
    try {
      await this.store.put(path, data, sha256);
    } catch (cause) {
      throw new CheckpointIoError('write task state file', this.store.describe(path), cause);
    }
    return { path, bytes: data.byteLength, sha256 };
  }

  async readTaskState(path: string, expected: { bytes: number; sha256: string }): Promise<Uint8Array> {
    return readVerifiedObject(this.store, path, this.store.describe(checkedTaskPath(path)), expected);
  }

  /** The recorded fence, read once per checkpoint id; a failed read is not kept, so the next write reads again. */
  private recordedFence(checkpointId: number): Promise<FencingToken | undefined> {
    if (this.fenceRead?.checkpointId !== checkpointId) {
      const current = this.fences.current();
      this.fenceRead = { checkpointId, current };
      current.catch(() => {
        if (this.fenceRead?.current === current) this.fenceRead = undefined;
      });
    }
    return this.fenceRead.current;
  }
}

/** A task state path from metadata, checked against the naming scheme so it cannot point outside the location. */
export function checkedTaskPath(path: string): string {
  if (parseTaskStatePath(path) === undefined) {
    throw new CheckpointCorruptError(path, 'the metadata names it as a task state file, which it cannot be');
  }
  return path;
}
