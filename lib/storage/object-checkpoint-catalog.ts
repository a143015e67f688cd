import { checkpointDirName, metadataPath, parseCheckpointDirName } from '../checkpoint/naming.ts';
import { planRetention } from '../checkpoint/retention-plan.ts';
import { SharedFileRegistry } from '../checkpoint/shared-file-registry.ts';
import type { CheckpointMetadata } from '../checkpoint/types.ts';
import { InternalError, assertNotFenced, type FencingToken } from '../core/index.ts';
import type { CheckpointCatalog, StorageLease, StoredCheckpoint } from './checkpoint-storage.ts';
import type { CheckpointCommitPoint, CommitRecord } from './commit-point.ts';
import { CheckpointCorruptError, CheckpointIoError } from './errors.ts';
import { FenceRecords } from './fence-records.ts';
import { sha256Hex } from './fs/durable-fs.ts';
import { errorCode } from './fs/verified-files.ts';
import { decodeMetadata, encodeMetadata } from './metadata-codec.ts';
import { ObjectCommitPoint } from './object-commit-point.ts';
import { ObjectJobRecords } from './object-job-records.ts';
import { ObjectSharedState } from './object-shared-state.ts';
import type { ObjectStore } from './object-store.ts';
import { checkedTaskPath } from './object-task-state-store.ts';

/** One `chk-…` folder (or commit record) as found. */
type ScannedCheckpoint = StoredCheckpoint | { readonly status: 'incomplete'; readonly checkpointId: number };
type CompleteCheckpoint = Extract<ScannedCheckpoint, { status: 'complete' }>;

const isComplete = (c: ScannedCheckpoint): c is CompleteCheckpoint => c.status === 'complete';

/** Metadata objects read at once while listing. */
const LIST_CONCURRENCY = 8;

export interface ObjectCheckpointCatalogOptions {
  /** How metadata becomes committed. @default create-if-absent on the store itself (ObjectCommitPoint) */
  readonly commitPoint?: CheckpointCommitPoint;
  /** Exclusive use of the location (see CheckpointCatalog.acquireLease). @default none: the runner locks */
  readonly acquireLease?: () => Promise<StorageLease>;
}

/**
 * The coordinator side of checkpoint storage over an object store, laid out as `chk-<id>/task-<v>-<s>.state`,
 * `chk-<id>/_metadata`, `shared/<name>`, job records at the root and fence records under `_fence/`. A checkpoint is
 * complete when its commit point vouches for its metadata; anything else under a `chk-…` folder is an incomplete
 * checkpoint that `removeIncomplete` deletes. One writing job per location: `removeIncomplete` would delete another
 * process's checkpoint in flight. Once fenced (`fence`), its deletions are refused after a newer epoch fences the location.
 */
export class ObjectCheckpointCatalog implements CheckpointCatalog {
  readonly location: string;
  readonly records: ObjectJobRecords;
  readonly sharedState: ObjectSharedState;
  readonly commitPoint: CheckpointCommitPoint;
  readonly acquireLease: (() => Promise<StorageLease>) | undefined;
  private readonly fences: FenceRecords;
  /**
   * The token this catalog raised the fence with (`fence`), if any. Deleting checkpoints is refused once a newer epoch
   * is recorded: a superseded coordinator's clean-up would otherwise remove the new owner's checkpoints of the same ids.
   */
  private owner: FencingToken | undefined;

  constructor(
    private readonly store: ObjectStore,
    options: ObjectCheckpointCatalogOptions = {},
  ) {
    this.location = store.location;
    this.records = new ObjectJobRecords(store);
    this.sharedState = new ObjectSharedState(store);
    this.commitPoint = options.commitPoint ?? new ObjectCommitPoint(store);
    this.acquireLease = options.acquireLease;
    this.fences = new FenceRecords(store);
  }

  async commitMetadata(metadata: CheckpointMetadata): Promise<void> {
    const id = metadata.checkpointId;
    const bytes = encodeMetadata(metadata);
    const path = metadataPath({ kind: 'checkpoint', checkpointId: id });
    try {
      decodeMetadata(bytes, this.store.describe(path), id);
    } catch (cause) {
      throw new InternalError(`refusing to commit checkpoint ${id}: its metadata would not read back`, cause);
    }
    if (metadata.fencing !== undefined) {
      assertNotFenced(`checkpoint storage ${this.location}`, await this.fences.current(), metadata.fencing);
    }
    await this.commitPoint.commit(id, path, bytes, await sha256Hex(bytes));
  }

  async fence(token: FencingToken): Promise<void> {
    await this.fences.raise(token, `checkpoint storage ${this.location}`);
    this.owner = token;
  }

  /**
   * FencedError when this catalog was fenced and a newer epoch has been recorded since. Read right before each
   * destructive step (not cached): the owner changes under a running zombie, and what it deletes is the new owner's.
   */
  private async assertOwner(): Promise<void> {
    if (this.owner !== undefined) assertNotFenced(`checkpoint storage ${this.location}`, await this.fences.current(), this.owner);
  }

  currentFence(): Promise<FencingToken | undefined> {
    return this.fences.current();
  }

  async list(): Promise<StoredCheckpoint[]> {
    return (await this.scan()).filter((c): c is StoredCheckpoint => c.status !== 'incomplete');
  }

  /**
   * Verifies every task file of each candidate (size, then a streamed sha256) and the size of its shared files,
   * newest first. Corruption skips to the previous checkpoint; an I/O error is thrown instead, because falling back
   * on a transient failure would silently rewind the job.
   */
  async latestComplete(onSkip?: (checkpointId: number, reason: string) => void): Promise<CheckpointMetadata | undefined> {
    for (const checkpoint of await this.list()) {
      if (checkpoint.status === 'corrupt') {
        onSkip?.(checkpoint.checkpointId, checkpoint.reason);
        continue;
      }
      try {
        for (const task of checkpoint.metadata.tasks) await this.verifyTaskFile(task.path, task);
        // Shared files by size only (hashing gigabytes of state at every start costs seconds); restoring verifies
        // each one's sha256 as it is read.
        for (const task of checkpoint.metadata.tasks) {
          for (const file of task.sharedFiles ?? []) {
            const size = await this.sharedState.size(file.path);
            const where = this.store.describe(file.path);
            if (size === undefined) throw new CheckpointCorruptError(where, 'the shared state file is missing');
            if (size !== file.bytes) throw new CheckpointCorruptError(where, `it has ${size} bytes, the metadata says ${file.bytes}`);
          }
        }
        return checkpoint.metadata;
      } catch (error) {
        if (!(error instanceof CheckpointCorruptError)) throw error;
        onSkip?.(checkpoint.checkpointId, error.problem);
      }
    }
    return undefined;
  }

  /** Metadata first, then the rest of the folder, then the commit record: a crash leaves an incomplete checkpoint. */
  async discard(checkpointId: number): Promise<void> {
    await this.assertOwner();
    const dir = checkpointDirName(checkpointId);
    try {
      await this.store.delete([metadataPath({ kind: 'checkpoint', checkpointId })]);
      await this.store.deleteFolder(dir);
    } catch (cause) {
      throw new CheckpointIoError(`discard checkpoint ${checkpointId} at`, this.store.describe(dir), cause);
    }
    await this.commitPoint.forget(checkpointId);
  }

  async removeIncomplete(): Promise<number[]> {
    await this.assertOwner();
    const removed: number[] = [];
    const found = await this.scan();
    for (const checkpoint of found) {
      if (checkpoint.status === 'incomplete') {
        // Again before each: an incomplete checkpoint may be the new owner's in flight once it has fenced.
        await this.discard(checkpoint.checkpointId);
        removed.push(checkpoint.checkpointId);
      } else {
        await this.removeTemporary(checkpointDirName(checkpoint.checkpointId));
      }
    }
    // Shared files no complete checkpoint lists were written by checkpoints that never completed.
    const registry = new SharedFileRegistry(found.filter(isComplete).map((c) => c.metadata));
    await this.assertOwner();
    await this.sharedState.removeTemporary();
    await this.sharedState.remove(registry.unreferenced(await this.sharedState.list()));
    return removed.sort((a, b) => a - b);
  }

  /**
   * Counts complete checkpoints only; savepoints are the user's and are neither counted nor deleted. Everything older
   * than the oldest retained checkpoint (complete, corrupt or abandoned) goes, except folders a retained checkpoint's
   * metadata points into; shared files go once no remaining checkpoint lists them.
   */
  async applyRetention(retain: number): Promise<number[]> {
    await this.assertOwner();
    const plan = planRetention(await this.scan(), retain);
    for (const checkpointId of plan.discard) await this.discard(checkpointId);
    await this.assertOwner();
    // Only after the metadata that listed them is gone: a crash in between leaves unreferenced files, not dangling references.
    await this.sharedState.remove(plan.freedSharedFiles);
    return plan.discard;
  }

  /** Every checkpoint with a folder or a commit record, newest first; other entries at the root are left alone. */
  private async scan(): Promise<ScannedCheckpoint[]> {
    let folders: string[];
    try {
      folders = await this.store.listFolders('');
    } catch (cause) {
      throw new CheckpointIoError('list the checkpoints in', this.store.describe(), cause);
    }
    const records = await this.commitPoint.records();
    const ids = new Set<number>(records?.keys() ?? []);
    for (const name of folders) {
      const id = parseCheckpointDirName(name);
      if (id !== undefined) ids.add(id);
    }
    const sorted = [...ids].sort((a, b) => b - a);
    const found = new Array<ScannedCheckpoint>(sorted.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < sorted.length) {
        const index = next++;
        const id = sorted[index] as number;
        found[index] = await this.inspect(id, records === undefined ? null : records.get(id));
      }
    };
    await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, sorted.length) }, worker));
    return found;
  }

  /** `record`: the commit record (undefined: none, so not committed), or null when the commit point keeps none. */
  private async inspect(checkpointId: number, record: CommitRecord | null | undefined): Promise<ScannedCheckpoint> {
    if (record === undefined) return { status: 'incomplete', checkpointId };
    const path = metadataPath({ kind: 'checkpoint', checkpointId });
    const where = this.store.describe(path);
    if (record !== null && record.metadataPath !== path) {
      return { status: 'corrupt', checkpointId, reason: `its commit record names ${record.metadataPath}, not this checkpoint's metadata` };
    }
    let bytes: Uint8Array | undefined;
    try {
      bytes = await this.store.get(path);
    } catch (cause) {
      if (errorCode(cause) === 'EISDIR') return { status: 'corrupt', checkpointId, reason: `${where} is a directory` };
      throw new CheckpointIoError('read checkpoint metadata', where, cause);
    }
    // No metadata, or committed but the metadata never arrived (a crash between the two writes): not complete.
    if (bytes === undefined) return { status: 'incomplete', checkpointId };
    if (record !== null && (bytes.byteLength !== record.bytes || (await sha256Hex(bytes)) !== record.sha256)) {
      const reason = new CheckpointCorruptError(where, 'it differs from the metadata that was committed (size or sha256 in the commit record)');
      return { status: 'corrupt', checkpointId, reason: reason.problem };
    }
    try {
      return { status: 'complete', checkpointId, metadata: decodeMetadata(bytes, where, checkpointId) };
    } catch (error) {
      if (!(error instanceof CheckpointCorruptError)) throw error;
      return { status: 'corrupt', checkpointId, reason: error.problem };
    }
  }

  private async verifyTaskFile(path: string, expected: { bytes: number; sha256: string }): Promise<void> {
    const where = this.store.describe(checkedTaskPath(path));
    let size: number | undefined;
    let actual: { bytes: number; sha256: string } | undefined;
    try {
      size = await this.store.size(path);
      if (size === expected.bytes) actual = await this.store.digest(path);
    } catch (cause) {
      throw new CheckpointIoError('verify task state file', where, cause);
    }
    if (size === undefined) throw new CheckpointCorruptError(where, 'the file is missing');
    if (size !== expected.bytes) throw new CheckpointCorruptError(where, `it has ${size} bytes, the metadata says ${expected.bytes}`);
    if (actual === undefined) throw new CheckpointCorruptError(where, 'the file is missing');
    if (actual.bytes !== expected.bytes || actual.sha256 !== expected.sha256) {
      throw new CheckpointCorruptError(where, 'its sha256 differs from the one recorded in the metadata');
    }
  }

  private async removeTemporary(dir: string): Promise<void> {
    try {
      await this.store.removeTemporary(dir);
    } catch (cause) {
      throw new CheckpointIoError('remove leftover temporary files in', this.store.describe(dir), cause);
    }
  }
}
