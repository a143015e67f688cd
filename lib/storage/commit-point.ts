/** What a commit point records for a committed checkpoint: where its metadata is and what it must hash to. */
export interface CommitRecord {
  /** Storage-relative path of the metadata object. */
  readonly metadataPath: string;
  readonly sha256: string;
  readonly bytes: number;
}

/**
 * The atomic step that makes a checkpoint complete. An object store whose create-if-absent is atomic (a folder:
 * link(2); S3: `If-None-Match: *`) is its own commit point (ObjectCommitPoint); a store without one (S3-compatible
 * servers that ignore conditional writes) needs an external record written on a condition (a DynamoDB item, see
 * lib/connectors/aws/s3/dynamodb-commit-point.ts).
 */
export interface CheckpointCommitPoint {
  /** Names the kind of commit for messages and options ('create-if-absent', 's3-conditional', 'dynamodb'). */
  readonly mode: string;
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
