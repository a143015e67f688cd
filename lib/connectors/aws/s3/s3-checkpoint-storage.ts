import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  checkpointDirName,
  metadataPath,
  parseCheckpointDirName,
  parseTaskStateFileName,
  parseTaskStatePath,
  taskStatePath,
} from '../../../checkpoint/naming.ts';
import { planRetention } from '../../../checkpoint/retention-plan.ts';
import { SharedFileRegistry } from '../../../checkpoint/shared-file-registry.ts';
import type { CheckpointMetadata } from '../../../checkpoint/types.ts';
import { InternalError } from '../../../core/index.ts';
import type { CheckpointStorage, StorageLease, StoredCheckpoint } from '../../../storage/checkpoint-storage.ts';
import { CheckpointCorruptError, CheckpointIoError } from '../../../storage/errors.ts';
import { sha256Hex } from '../../../storage/fs/durable-fs.ts';
import { decodeMetadata, encodeMetadata } from '../../../storage/metadata-codec.ts';
import { awsClientConfig } from '../client-config.ts';
import { forEachLimited } from '../for-each-limited.ts';
import type { CheckpointCommitPoint, CommitRecord } from './commit-point.ts';
import { DynamoDbCommitPoint } from './dynamodb-commit-point.ts';
import { DynamoDbLease } from './dynamodb-lease.ts';
import { S3ConditionalCommitPoint } from './s3-conditional-commit-point.ts';
import { compileS3CheckpointOptions, type S3CheckpointStorageOptions } from './s3-checkpoint-options.ts';
import { S3JobRecordStore } from './s3-job-record-store.ts';
import { createS3Client } from './s3-client.ts';
import { S3Objects } from './s3-objects.ts';
import { S3SharedStateStore } from './s3-shared-state-store.ts';

/** One `chk-…` folder (or commit record) as found. */
type ScannedCheckpoint = StoredCheckpoint | { readonly status: 'incomplete'; readonly checkpointId: number };
type CompleteCheckpoint = Extract<ScannedCheckpoint, { status: 'complete' }>;

const isComplete = (c: ScannedCheckpoint): c is CompleteCheckpoint => c.status === 'complete';

/** Metadata objects read at once while listing. */
const LIST_CONCURRENCY = 8;

/**
 * Checkpoints in S3 under `s3://bucket/prefix`, laid out as the filesystem storage lays out a folder:
 * `chk-<id>/task-<v>-<s>.state`, `chk-<id>/_metadata`, `shared/<name>`. Task files and shared files go up whole
 * (multipart above the part size) and carry their sha256 as object metadata; reads verify size and sha256.
 *
 * S3 overwrites objects silently, so "the metadata object exists" cannot be the commit. The commit point (see
 * `commitMode`) makes exactly one writer win a checkpoint id, and `list`/`latestComplete` trust a metadata object
 * only when the commit point vouches for it. One writing job per location: `removeIncomplete` deletes what another
 * process may be writing.
 */
export class S3CheckpointStorage implements CheckpointStorage {
  readonly location: string;
  readonly sharedState: S3SharedStateStore;
  readonly records: S3JobRecordStore;
  readonly commitMode: CheckpointCommitPoint['mode'];
  private readonly objects: S3Objects;
  private readonly commitPoint: CheckpointCommitPoint;
  private readonly ownClients: { destroy(): void }[] = [];
  private readonly lease: { client: DynamoDBClient; table: string } | undefined;

  constructor(options: S3CheckpointStorageOptions) {
    const compiled = compileS3CheckpointOptions(options);
    let s3 = options.s3Client;
    if (s3 === undefined) {
      s3 = createS3Client(options.aws, options.forcePathStyle);
      this.ownClients.push(s3);
    }
    this.objects = new S3Objects(s3, compiled, { partSizeBytes: compiled.partSizeBytes, queueSize: compiled.uploadConcurrency });
    this.location = this.objects.url();
    this.sharedState = new S3SharedStateStore(this.objects);
    this.records = new S3JobRecordStore(this.objects);
    if (compiled.commitMode === 'dynamodb') {
      let dynamo = options.dynamoDbClient;
      if (dynamo === undefined) {
        dynamo = new DynamoDBClient(awsClientConfig('dynamodb', options.aws));
        this.ownClients.push(dynamo);
      }
      this.commitPoint = new DynamoDbCommitPoint(dynamo, compiled.commitTable as string, this.objects);
      this.lease = { client: dynamo, table: compiled.commitTable as string };
    } else {
      this.commitPoint = new S3ConditionalCommitPoint(this.objects);
      this.lease = undefined;
    }
    this.commitMode = this.commitPoint.mode;
  }

  async writeTaskState(checkpointId: number, name: string, data: Uint8Array): Promise<{ path: string; bytes: number; sha256: string }> {
    const task = parseTaskStateFileName(name);
    if (task === undefined) {
      throw new InternalError(`"${name}" is not a task state file name (expected task-<vertex>-<subtask>.state)`);
    }
    const path = taskStatePath({ kind: 'checkpoint', checkpointId }, task);
    const sha256 = await sha256Hex(data);
    try {
      await this.objects.putBytes(path, data, sha256);
    } catch (cause) {
      throw new CheckpointIoError('write task state file', this.objects.url(path), cause);
    }
    return { path, bytes: data.byteLength, sha256 };
  }

  async readTaskState(path: string, expected: { bytes: number; sha256: string }): Promise<Uint8Array> {
    const url = this.objects.url(this.checkedTaskPath(path));
    let data: Uint8Array | undefined;
    try {
      data = await this.objects.getBytes(path);
    } catch (cause) {
      throw new CheckpointIoError('read task state file', url, cause);
    }
    if (data === undefined) throw new CheckpointCorruptError(url, 'the file is missing');
    if (data.byteLength !== expected.bytes) {
      throw new CheckpointCorruptError(url, `it has ${data.byteLength} bytes, the metadata says ${expected.bytes}`);
    }
    if ((await sha256Hex(data)) !== expected.sha256) {
      throw new CheckpointCorruptError(url, 'its sha256 differs from the one recorded in the metadata');
    }
    return data;
  }

  async commitMetadata(metadata: CheckpointMetadata): Promise<void> {
    const id = metadata.checkpointId;
    const bytes = encodeMetadata(metadata);
    const path = metadataPath({ kind: 'checkpoint', checkpointId: id });
    try {
      decodeMetadata(bytes, this.objects.url(path), id);
    } catch (cause) {
      throw new InternalError(`refusing to commit checkpoint ${id}: its metadata would not read back`, cause);
    }
    await this.commitPoint.commit(id, path, bytes, await sha256Hex(bytes));
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
        // Shared files by size only; restoring verifies each one's sha256 as it downloads it.
        for (const task of checkpoint.metadata.tasks) {
          for (const file of task.sharedFiles ?? []) {
            const size = await this.sharedState.size(file.path);
            const url = this.objects.url(file.path);
            if (size === undefined) throw new CheckpointCorruptError(url, 'the shared state file is missing');
            if (size !== file.bytes) throw new CheckpointCorruptError(url, `it has ${size} bytes, the metadata says ${file.bytes}`);
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

  /** Metadata object first, then the rest of the folder, then the commit record: a crash leaves an incomplete one. */
  async discard(checkpointId: number): Promise<void> {
    const dir = checkpointDirName(checkpointId);
    try {
      await this.objects.deleteOne(metadataPath({ kind: 'checkpoint', checkpointId }));
      await this.objects.deleteMany(await this.objects.listPaths(dir));
    } catch (cause) {
      throw new CheckpointIoError(`discard checkpoint ${checkpointId} at`, this.objects.url(dir), cause);
    }
    await this.commitPoint.forget(checkpointId);
  }

  async removeIncomplete(): Promise<number[]> {
    const removed: number[] = [];
    const found = await this.scan();
    for (const checkpoint of found) {
      if (checkpoint.status !== 'incomplete') continue;
      await this.discard(checkpoint.checkpointId);
      removed.push(checkpoint.checkpointId);
    }
    // Shared files no complete checkpoint lists were written by checkpoints that never completed.
    const registry = new SharedFileRegistry(found.filter(isComplete).map((c) => c.metadata));
    await this.sharedState.remove(registry.unreferenced(await this.sharedState.list()));
    return removed.sort((a, b) => a - b);
  }

  /**
   * Counts complete checkpoints only; savepoints are the user's and are neither counted nor deleted. Everything older
   * than the oldest retained checkpoint (complete, corrupt or abandoned) goes, except folders a retained checkpoint's
   * metadata points into; shared files go once no remaining checkpoint lists them.
   */
  async applyRetention(retain: number): Promise<number[]> {
    const plan = planRetention(await this.scan(), retain);
    for (const checkpointId of plan.discard) await this.discard(checkpointId);
    // Only after the metadata that listed them is gone: a crash in between leaves unreferenced files, not dangling references.
    await this.sharedState.remove(plan.freedSharedFiles);
    return plan.discard;
  }

  /**
   * With a commit table: a lease item there (see DynamoDbLease) makes this job the only one on the location. In
   * 's3-conditional' mode there is none: one job per location is then the user's to ensure.
   */
  get acquireLease(): (() => Promise<StorageLease>) | undefined {
    const lease = this.lease;
    return lease === undefined ? undefined : () => DynamoDbLease.acquire(lease.client, lease.table, this.location);
  }

  /** Destroys the clients this storage created. */
  close(): void {
    for (const client of this.ownClients.splice(0)) client.destroy();
  }

  /** Every checkpoint with a folder or a commit record, newest first; other objects under the prefix are left alone. */
  private async scan(): Promise<ScannedCheckpoint[]> {
    let folders: string[];
    try {
      folders = await this.objects.listFolders('');
    } catch (cause) {
      throw new CheckpointIoError('list the checkpoints in', this.location, cause);
    }
    const records = await this.commitPoint.records();
    const ids = new Set<number>(records?.keys() ?? []);
    for (const name of folders) {
      const id = parseCheckpointDirName(name);
      if (id !== undefined) ids.add(id);
    }
    const sorted = [...ids].sort((a, b) => b - a);
    const found = new Array<ScannedCheckpoint>(sorted.length);
    await forEachLimited(sorted, LIST_CONCURRENCY, async (id, index) => {
      found[index] = await this.inspect(id, records === undefined ? null : records.get(id));
    });
    return found;
  }

  /** `record`: the commit record (undefined: none, so not committed), or null when the commit point keeps none. */
  private async inspect(checkpointId: number, record: CommitRecord | null | undefined): Promise<ScannedCheckpoint> {
    if (record === undefined) return { status: 'incomplete', checkpointId };
    const path = record?.metadataPath ?? metadataPath({ kind: 'checkpoint', checkpointId });
    const url = this.objects.url(path);
    if (record !== null && record.metadataPath !== metadataPath({ kind: 'checkpoint', checkpointId })) {
      return { status: 'corrupt', checkpointId, reason: `its commit record names ${record.metadataPath}, not this checkpoint's metadata` };
    }
    let bytes: Uint8Array | undefined;
    try {
      bytes = await this.objects.getBytes(path);
    } catch (cause) {
      throw new CheckpointIoError('read checkpoint metadata', url, cause);
    }
    // Committed but the metadata never arrived (a crash between the two writes): the commit did not finish.
    if (bytes === undefined) return { status: 'incomplete', checkpointId };
    if (record !== null && (bytes.byteLength !== record.bytes || (await sha256Hex(bytes)) !== record.sha256)) {
      const reason = new CheckpointCorruptError(url, 'it differs from the metadata that was committed (size or sha256 in the commit record)');
      return { status: 'corrupt', checkpointId, reason: reason.problem };
    }
    try {
      return { status: 'complete', checkpointId, metadata: decodeMetadata(bytes, url, checkpointId) };
    } catch (error) {
      if (!(error instanceof CheckpointCorruptError)) throw error;
      return { status: 'corrupt', checkpointId, reason: error.problem };
    }
  }

  private async verifyTaskFile(path: string, expected: { bytes: number; sha256: string }): Promise<void> {
    const url = this.objects.url(this.checkedTaskPath(path));
    let head: { bytes: number } | undefined;
    let actual: { bytes: number; sha256: string } | undefined;
    try {
      head = await this.objects.head(path);
      if (head !== undefined && head.bytes === expected.bytes) actual = await this.objects.hash(path);
    } catch (cause) {
      throw new CheckpointIoError('verify task state file', url, cause);
    }
    if (head === undefined) throw new CheckpointCorruptError(url, 'the file is missing');
    if (head.bytes !== expected.bytes) throw new CheckpointCorruptError(url, `it has ${head.bytes} bytes, the metadata says ${expected.bytes}`);
    if (actual === undefined) throw new CheckpointCorruptError(url, 'the file is missing');
    if (actual.bytes !== expected.bytes || actual.sha256 !== expected.sha256) {
      throw new CheckpointCorruptError(url, 'its sha256 differs from the one recorded in the metadata');
    }
  }

  /** A task state path from metadata, checked against the naming scheme so it cannot point outside the prefix. */
  private checkedTaskPath(path: string): string {
    if (parseTaskStatePath(path) === undefined) {
      throw new CheckpointCorruptError(path, 'the metadata names it as a task state file, which it cannot be');
    }
    return path;
  }
}
