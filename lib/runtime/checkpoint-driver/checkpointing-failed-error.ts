import { SluiceError } from '../../core/index.ts';
import type { FailJobCommand } from '../../checkpoint/coordinator-protocol.ts';

/**
 * More checkpoints failed in a row than the job tolerates (`tolerableFailures`, --tolerable-checkpoint-failures):
 * the attempt fails, and restarts or fails the job as the restart strategy says. The message carries the last
 * checkpoint's failure, which names the storage error (e.g. ENOSPC or EACCES and the file).
 */
export class CheckpointingFailedError extends SluiceError {
  readonly failures: number;

  constructor(command: FailJobCommand) {
    super(
      'CHECKPOINTING_FAILED',
      `${command.failures} checkpoints failed in a row, more than the ${command.tolerated} tolerated (--tolerable-checkpoint-failures); ` +
        `checkpoint ${command.checkpointId}: ${command.reason}`,
      { retriable: true },
    );
    this.failures = command.failures;
  }
}
