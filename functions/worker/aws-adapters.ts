import { ConfigError } from '../../lib/core/index.ts';
import type { AckWriter, ControlReader, SlotLeaseKeeper } from '../../lib/cluster/ports.ts';
import type { WorkerSettings } from '../../lib/cli/worker-command.ts';

/** What the worker needs of the control table: the leases part's DynamoDB adapters, or in-memory ones in tests. */
export interface WorkerAdapters {
  readonly control: ControlReader;
  readonly acks: AckWriter;
  readonly leases: SlotLeaseKeeper;
}

export interface WorkerAdapterRequest {
  readonly settings: WorkerSettings;
  readonly workerId: string;
}

/**
 * The DynamoDB adapters of the control table for one worker. The only place the worker names them: the leases
 * part builds `WorkerControlTable` (lib/connectors/aws/cluster/worker-control-table.ts: ControlReader + AckWriter,
 * consistent reads, acks as TransactWriteItems [ConditionCheck lease owner+epoch, Put]) and `DynamoDbLeaseKeeper`
 * (lib/connectors/aws/cluster/dynamodb-lease-keeper.ts). At the merge this becomes:
 *
 *   const table = new WorkerControlTable({ tableName: settings.controlTable, jobId: settings.jobId });
 *   const leases = new DynamoDbLeaseKeeper({ table, workerId, leaseDurationMs: settings.leaseDurationMs, maxSlots: settings.maxSlots });
 *   return { control: table, acks: table, leases };
 *
 * Until then a worker can only run with adapters passed in (tests, `runWorker({ adapters })`).
 */
export function createWorkerAwsAdapters(request: WorkerAdapterRequest): Promise<WorkerAdapters> {
  return Promise.reject(
    new ConfigError(
      `the DynamoDB control-table adapters are not part of this build yet: worker ${request.workerId} cannot reach control table ${request.settings.controlTable}`,
    ),
  );
}
