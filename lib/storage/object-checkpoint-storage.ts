import type { CheckpointMetadata } from '../checkpoint/types.ts';
import type { FencingToken } from '../core/index.ts';
import type { CheckpointStorage, StorageLease, StoredCheckpoint, WrittenTaskState } from './checkpoint-storage.ts';
import { ObjectCheckpointCatalog, type ObjectCheckpointCatalogOptions } from './object-checkpoint-catalog.ts';
import type { ObjectJobRecords } from './object-job-records.ts';
import type { ObjectSharedState } from './object-shared-state.ts';
import type { ObjectStore } from './object-store.ts';
import { ObjectTaskStateStore } from './object-task-state-store.ts';

/**
 * Both halves of checkpoint storage over one object store, for the embedded runner (one process that is worker and
 * coordinator at once). The filesystem and S3 storages are this class over their adapters.
 */
export class ObjectCheckpointStorage implements CheckpointStorage {
  readonly location: string;
  readonly tasks: ObjectTaskStateStore;
  readonly catalog: ObjectCheckpointCatalog;

  constructor(store: ObjectStore, options: ObjectCheckpointCatalogOptions = {}) {
    this.location = store.location;
    this.tasks = new ObjectTaskStateStore(store);
    this.catalog = new ObjectCheckpointCatalog(store, options);
  }

  get sharedState(): ObjectSharedState {
    return this.tasks.sharedState;
  }

  get records(): ObjectJobRecords {
    return this.catalog.records;
  }

  get acquireLease(): (() => Promise<StorageLease>) | undefined {
    return this.catalog.acquireLease;
  }

  writeTaskState(checkpointId: number, name: string, data: Uint8Array, fencing?: FencingToken): Promise<WrittenTaskState> {
    return this.tasks.writeTaskState(checkpointId, name, data, fencing);
  }

  readTaskState(path: string, expected: { bytes: number; sha256: string }): Promise<Uint8Array> {
    return this.tasks.readTaskState(path, expected);
  }

  commitMetadata(metadata: CheckpointMetadata): Promise<void> {
    return this.catalog.commitMetadata(metadata);
  }

  list(): Promise<StoredCheckpoint[]> {
    return this.catalog.list();
  }

  latestComplete(onSkip?: (checkpointId: number, reason: string) => void): Promise<CheckpointMetadata | undefined> {
    return this.catalog.latestComplete(onSkip);
  }

  discard(checkpointId: number): Promise<void> {
    return this.catalog.discard(checkpointId);
  }

  removeIncomplete(): Promise<number[]> {
    return this.catalog.removeIncomplete();
  }

  applyRetention(retain: number): Promise<number[]> {
    return this.catalog.applyRetention(retain);
  }

  fence(token: FencingToken): Promise<void> {
    return this.catalog.fence(token);
  }

  currentFence(): Promise<FencingToken | undefined> {
    return this.catalog.currentFence();
  }
}
