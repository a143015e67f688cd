import { ObjectCheckpointStorage } from '../object-checkpoint-storage.ts';
import { FsObjectStore } from './fs-object-store.ts';

/**
 * Checkpoints in a local folder, one `chk-<id>` directory each: the object-store checkpoint storage over files.
 * Task files are published by rename after fsync; the checkpoint becomes complete when `_metadata` is linked into
 * place (create-if-absent) and the directory is fsynced, so a crash at any moment leaves either a complete
 * checkpoint or a directory without `_metadata` that `removeIncomplete` deletes.
 *
 * One writer per folder: `removeIncomplete` would delete another process's in-flight checkpoint.
 */
export class FileCheckpointStorage extends ObjectCheckpointStorage {
  readonly store: FsObjectStore;

  constructor(dir: string) {
    const store = new FsObjectStore(dir);
    super(store);
    this.store = store;
  }
}
