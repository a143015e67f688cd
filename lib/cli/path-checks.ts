import { isRemoteLocation } from '../runtime/restore/open-checkpoint-storage.ts';
import { checkOutputDirectory } from '../connectors/local/output-file-checks.ts';
import { DEFAULT_STATE_DIR } from '../runtime/state-backend-config.ts';
import type { RunSettings } from './run-settings.ts';

/**
 * Checks the local folders the run will write (checkpoints, savepoints, RocksDB state) before the job starts, so a
 * folder that is a file or cannot be written is a configuration error (exit 2, with the OS cause) rather than a
 * task failure half-way through. Remote locations (s3://) are checked when they are opened.
 */
export function checkRunDirectories(settings: RunSettings): void {
  const checkpointing = settings.checkpointing;
  if (checkpointing !== undefined && !isRemoteLocation(checkpointing.dir)) {
    checkOutputDirectory(checkpointing.dir, '--checkpoint-dir');
    if (checkpointing.savepointDir !== undefined && !isRemoteLocation(checkpointing.savepointDir)) {
      checkOutputDirectory(checkpointing.savepointDir, '--savepoint-dir');
    }
  }
  const { kind, dir } = settings.stateBackend;
  if (kind === 'rocksdb') checkOutputDirectory(dir ?? DEFAULT_STATE_DIR, '--state-dir');
}
