import { ObjectSharedState } from '../object-shared-state.ts';
import { FsObjectStore } from './fs-object-store.ts';

/**
 * The `shared/` folder under `root` (a checkpoint folder, or a self-contained savepoint): the shared area over
 * files. A file is published by rename after fsync, so it is whole or absent.
 */
export class SharedStateDirectory extends ObjectSharedState {
  constructor(root: string) {
    super(new FsObjectStore(root));
  }
}
