import type { CheckpointStorage } from '../../storage/checkpoint-storage.ts';
import { isRemoteLocation, openCheckpointStorageAt } from '../../storage/storage-locations.ts';
import { injectsDiskFull } from '../../core/fault-injection.ts';
import { DiskFullFaults } from '../test-faults/faulty-storage.ts';

export { isRemoteLocation };

/**
 * The checkpoint storage for `--checkpoint-dir`: a local folder, or a location of a scheme the composition root
 * registered (`s3://bucket/prefix`, see lib/storage/storage-locations.ts). Only local folders are known here, so
 * local jobs never load the AWS SDK and the engine imports no connector.
 */
export async function openCheckpointStorage(location: string): Promise<CheckpointStorage> {
  const storage = await openCheckpointStorageAt(location);
  // Only the crash tests' fault injection wraps storage; otherwise jobs get the storage itself.
  return injectsDiskFull ? new DiskFullFaults(storage) : storage;
}
