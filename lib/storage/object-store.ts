/** Size and hex SHA-256 of an object's bytes. */
export interface ObjectDigest {
  readonly bytes: number;
  readonly sha256: string;
}

/**
 * The port both checkpoint storages are written over: whole objects at storage-relative paths ('/'-separated, e.g.
 * `chk-0000000001/_metadata`) under one location. A local folder (FsObjectStore) and an S3 prefix (S3ObjectStore)
 * implement it; a cluster deployment may add others (EFS is a folder). Everything above it (listing, incomplete
 * clean-up, retention, verification, job records, the shared area, fencing) is written once, in
 * ObjectCheckpointStorage.
 *
 * Semantics every adapter guarantees:
 * - An object is whole or absent: a reader never sees part of a `put`, and a crashed `put` leaves at most a
 *   temporary that `list` does not show and `removeTemporary` deletes.
 * - `put` replaces an object whole; when it resolves the object is durable (on disk, or acknowledged by S3).
 * - `putIfAbsent` creates an object only if none exists at that path, atomically: of two concurrent callers exactly
 *   one gets `true`. This is the commit of a checkpoint and the raise of a fence.
 * - A missing object is `undefined` (or `false`), never an error. Other failures are thrown as the adapter got them
 *   (errno errors, SDK errors): callers wrap them with what they were doing (CheckpointIoError), naming the object
 *   by `describe(path)`.
 */
export interface ObjectStore {
  /** Human-readable location of the root, as the user gave it ("./checkpoints", "s3://bucket/prefix"). */
  readonly location: string;
  /** Full name of an object for messages: an absolute file path or an s3:// URL; the root without a path. */
  describe(path?: string): string;
  /** The object's bytes, or undefined when it does not exist. */
  get(path: string): Promise<Uint8Array | undefined>;
  /** The object's size, or undefined when it does not exist (cheap: no read of the bytes). */
  size(path: string): Promise<number | undefined>;
  /** Size and SHA-256 of the object, streamed (not loaded whole); undefined when it does not exist. */
  digest(path: string): Promise<ObjectDigest | undefined>;
  /** Writes (or replaces) an object whole and durably. `sha256` of `data` when the caller has it (stored beside it). */
  put(path: string, data: Uint8Array, sha256?: string): Promise<void>;
  /** Creates the object only if no object exists at `path`: true when this call created it, false when one existed. */
  putIfAbsent(path: string, data: Uint8Array, sha256?: string): Promise<boolean>;
  /**
   * Publishes the local file `localPath` as an object, without loading it whole; returns what was published. The
   * store may take the file over (move it): the caller must not use it afterwards except to delete it.
   */
  putFile(path: string, localPath: string): Promise<ObjectDigest>;
  /**
   * Copies an object into the local file `localPath` (replacing it; parent folders are created), returning what was
   * copied, or undefined when the object does not exist. The caller verifies the digest.
   */
  getFile(path: string, localPath: string): Promise<ObjectDigest | undefined>;
  /** Paths of every object under the folder `dir` ('' for the root), at any depth, temporaries excluded. */
  list(dir: string): Promise<string[]>;
  /** Names of the folders directly under `dir` ('' for the root) that hold at least one object or entry. */
  listFolders(dir: string): Promise<string[]>;
  /** Deletes objects; a missing one is fine. */
  delete(paths: readonly string[]): Promise<void>;
  /** Deletes a folder and everything under it; a missing one is fine. */
  deleteFolder(dir: string): Promise<void>;
  /**
   * Deletes the temporaries crashed puts left under `dir` (at any depth). Only safe while no put runs there; a
   * no-op on stores whose puts leave nothing behind (S3).
   */
  removeTemporary(dir: string): Promise<void>;
}
