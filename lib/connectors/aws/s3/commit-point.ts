/** What the commit point records for a committed checkpoint: where its metadata is and what it must hash to. */
export interface CommitRecord {
  /** Storage-relative path of the metadata object. */
  readonly metadataPath: string;
  readonly sha256: string;
  readonly bytes: number;
}

/** How a checkpoint's metadata becomes committed (see docs/connectors/s3-checkpoints.md). */
export type CommitMode = 'dynamodb' | 's3-conditional';

/**
 * The atomic step that makes a checkpoint complete. S3 overwrites silently, so the storage cannot rely on "the
 * metadata object exists": either a DynamoDB item written on the condition that none exists records the commit
 * (and the metadata's sha256), or S3's own conditional put (`If-None-Match: *`) does.
 */
export interface CheckpointCommitPoint {
  readonly mode: CommitMode;
  /**
   * Publishes `bytes` as the metadata of checkpoint `checkpointId`. Refuses (InternalError) an id that another
   * commit holds; committing identical bytes again (a retry) is allowed. I/O failures are CheckpointIoErrors.
   */
  commit(checkpointId: number, metadataPath: string, bytes: Uint8Array, sha256: string): Promise<void>;
  /** Commit records by checkpoint id; undefined when the metadata objects are their own commit records. */
  records(): Promise<ReadonlyMap<number, CommitRecord> | undefined>;
  /** Drops the commit record of a discarded checkpoint (after its metadata object is gone). Idempotent. */
  forget(checkpointId: number): Promise<void>;
}
