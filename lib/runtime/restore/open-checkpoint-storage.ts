import { ConfigError } from '../../core/index.ts';
import type { CheckpointStorage } from '../../storage/checkpoint-storage.ts';
import { FileCheckpointStorage } from '../../storage/fs/file-checkpoint-storage.ts';
import { injectsDiskFull } from '../../core/fault-injection.ts';
import { DiskFullFaults } from '../test-faults/faulty-storage.ts';

/** Whether a checkpoint location is an object store URI rather than a local folder. */
export function isRemoteLocation(location: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(location);
}

/**
 * The checkpoint storage for `--checkpoint-dir`: a local folder, or `s3://bucket/prefix`. The S3 implementation is
 * imported only when asked for, so local jobs never load the AWS SDK.
 */
export async function openCheckpointStorage(location: string): Promise<CheckpointStorage> {
  const storage = await openUnwrapped(location);
  // Only the crash tests' fault injection wraps storage; otherwise jobs get the storage itself.
  return injectsDiskFull ? new DiskFullFaults(storage) : storage;
}

async function openUnwrapped(location: string): Promise<CheckpointStorage> {
  if (!isRemoteLocation(location)) return new FileCheckpointStorage(location);
  if (location.toLowerCase().startsWith('s3://')) {
    const { openS3CheckpointStorage } = await import('../../connectors/aws/s3/open-s3-checkpoint-storage.ts');
    return openS3CheckpointStorage(location);
  }
  throw new ConfigError(
    `unsupported checkpoint location "${location}": use a local folder or s3://bucket/prefix (--checkpoint-dir)`,
  );
}
