import { checkpointDirName, metadataPath } from '../../checkpoint/naming.ts';
import type { CheckpointMetadata } from '../../checkpoint/types.ts';
import type { FencingToken } from '../../core/index.ts';
import type { CheckpointStorage, StoredCheckpoint, WrittenTaskState } from '../../storage/checkpoint-storage.ts';
import { CheckpointIoError } from '../../storage/errors.ts';
import { diskFullPoint } from '../../core/fault-injection.ts';

/**
 * Checkpoint storage whose writes fail as on a full disk where SLUICE_FAIL_AT=checkpoint-write:<n>[+] says (see
 * fault-injection.ts): the error is the CheckpointIoError the real storage throws, naming the file, with an ENOSPC
 * cause. Reads, listing and clean-up pass through. Used only when that variable asks for it.
 */
export class DiskFullFaults implements CheckpointStorage {
  constructor(private readonly storage: CheckpointStorage) {}

  get location(): string {
    return this.storage.location;
  }

  get sharedState(): CheckpointStorage['sharedState'] {
    return this.storage.sharedState;
  }

  get records(): CheckpointStorage['records'] {
    return this.storage.records;
  }

  async writeTaskState(checkpointId: number, name: string, data: Uint8Array, fencing?: FencingToken): Promise<WrittenTaskState> {
    this.inject('write task state file', `${checkpointDirName(checkpointId)}/${name}`);
    return this.storage.writeTaskState(checkpointId, name, data, fencing);
  }

  get acquireLease(): CheckpointStorage['acquireLease'] {
    return this.storage.acquireLease?.bind(this.storage);
  }

  readTaskState(path: string, expected: { bytes: number; sha256: string }): Promise<Uint8Array> {
    return this.storage.readTaskState(path, expected);
  }

  async commitMetadata(metadata: CheckpointMetadata): Promise<void> {
    const id = metadata.checkpointId;
    this.inject(`commit the metadata of checkpoint ${id} to`, metadataPath({ kind: 'checkpoint', checkpointId: id }));
    return this.storage.commitMetadata(metadata);
  }

  list(): Promise<StoredCheckpoint[]> {
    return this.storage.list();
  }

  latestComplete(onSkip?: (checkpointId: number, reason: string) => void): Promise<CheckpointMetadata | undefined> {
    return this.storage.latestComplete(onSkip);
  }

  discard(checkpointId: number): Promise<void> {
    return this.storage.discard(checkpointId);
  }

  removeIncomplete(): Promise<number[]> {
    return this.storage.removeIncomplete();
  }

  applyRetention(retain: number): Promise<number[]> {
    return this.storage.applyRetention(retain);
  }

  fence(token: FencingToken): Promise<void> {
    return this.storage.fence(token);
  }

  currentFence(): Promise<FencingToken | undefined> {
    return this.storage.currentFence();
  }

  private inject(operation: string, relativePath: string): void {
    try {
      diskFullPoint();
    } catch (cause) {
      throw new CheckpointIoError(operation, `${this.storage.location.replace(/\/+$/, '')}/${relativePath}`, cause);
    }
  }
}
