import { SluiceError } from '../../../core/index.ts';
import { awsErrorName, errorMessage } from '../kinesis/errors.ts';
import { cancellationReasons, classifyFailure } from '../dynamodb/errors.ts';

/**
 * A call to the job's control table failed for a reason other than a fencing condition: throttling, a server or
 * network error (retriable: the next lease round or ack tries again), or a request DynamoDB refuses (not retriable:
 * usually a missing table or permission; the message names the table and the operation).
 */
export class ClusterControlError extends SluiceError {
  /** DynamoDB's exception name, when there is one. */
  readonly errorName: string | undefined;

  constructor(operation: string, table: string, cause: unknown, retriable: boolean) {
    const name = awsErrorName(cause);
    const reasons = cancellationReasons(cause);
    super(
      'CLUSTER_CONTROL',
      `control table "${table}": ${operation} failed: ${name ?? 'error'}${reasons.length > 0 ? ` [${reasons.join(', ')}]` : ''}: ${errorMessage(cause)}` +
        (retriable ? ' (will be tried again)' : '; check that the table exists (sluice aws init) and that this worker may write it'),
      { cause, retriable },
    );
    this.errorName = name;
  }
}

/**
 * Whether a failed write failed on its fencing condition: a ConditionalCheckFailedException of a single-item call,
 * or a cancelled transaction whose item at `conditionIndex` failed its condition.
 */
export function failedOnCondition(error: unknown, conditionIndex = 0): boolean {
  const name = awsErrorName(error);
  if (name === 'ConditionalCheckFailedException') return true;
  return name === 'TransactionCanceledException' && cancellationReasons(error)[conditionIndex] === 'ConditionalCheckFailed';
}

/** The typed error for any other failure, retriable when DynamoDB or the network may answer differently next time. */
export function controlTableError(operation: string, table: string, error: unknown): ClusterControlError {
  const kind = classifyFailure(error);
  return new ClusterControlError(operation, table, error, kind === 'retry' || kind === 'token-mismatch');
}

/** The slot's lease no longer names this worker and epoch: the slot must stop (another worker runs it now). */
export class LeaseLostError extends SluiceError {
  readonly slot: number;
  readonly epoch: number;

  constructor(slot: number, epoch: number, operation: string) {
    super('LEASE_LOST', `slot ${slot}: cannot ${operation}: its lease no longer names this worker at epoch ${epoch} (another worker took it)`, {
      retriable: false,
    });
    this.slot = slot;
    this.epoch = epoch;
  }
}
