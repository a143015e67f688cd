import { InternalError } from '../core/index.ts';
import type { CheckpointCommitPoint, CommitRecord } from './commit-point.ts';
import { CheckpointIoError } from './errors.ts';
import { sha256Hex } from './fs/durable-fs.ts';
import type { ObjectStore } from './object-store.ts';

export interface ObjectCommitPointOptions {
  /** Names the commit for messages and options. @default 'create-if-absent' */
  readonly mode?: string;
  /**
   * Whether committing the very bytes that are there already succeeds. A remote store may have committed a
   * request whose answer was lost, so its retry must find success; a local commit cannot lose its answer, and
   * there a second commit of an id is always a caller's bug. @default false
   */
  readonly identicalRetrySucceeds?: boolean;
}

/**
 * Commits by creating the metadata object only if it does not exist (ObjectStore.putIfAbsent): of two writers
 * exactly one succeeds, and the metadata's own checksum trailer is all a reader needs.
 */
export class ObjectCommitPoint implements CheckpointCommitPoint {
  readonly mode: string;
  private readonly identicalRetrySucceeds: boolean;

  constructor(
    private readonly store: ObjectStore,
    options: ObjectCommitPointOptions = {},
  ) {
    this.mode = options.mode ?? 'create-if-absent';
    this.identicalRetrySucceeds = options.identicalRetrySucceeds ?? false;
  }

  async commit(checkpointId: number, metadataPath: string, bytes: Uint8Array, sha256: string): Promise<void> {
    const where = this.store.describe(metadataPath);
    let created: boolean;
    let existing: Uint8Array | undefined;
    try {
      created = await this.store.putIfAbsent(metadataPath, bytes, sha256);
      if (!created && this.identicalRetrySucceeds) existing = await this.store.get(metadataPath);
    } catch (cause) {
      throw new CheckpointIoError(`commit the metadata of checkpoint ${checkpointId} to`, where, cause);
    }
    if (created) return;
    if (existing !== undefined && existing.byteLength === bytes.byteLength && (await sha256Hex(existing)) === sha256) return;
    throw new InternalError(
      `checkpoint ${checkpointId} in ${this.store.location} is already complete (${where} exists); checkpoint ids must be new`,
    );
  }

  records(): Promise<ReadonlyMap<number, CommitRecord> | undefined> {
    return Promise.resolve(undefined);
  }

  forget(): Promise<void> {
    return Promise.resolve();
  }
}
