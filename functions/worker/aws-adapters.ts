import type { AckWriter, ControlReader, SlotLeaseKeeper } from '../../lib/cluster/ports.ts';
import type { ExchangeTransport } from '../../lib/cluster/exchange/index.ts';
import { KinesisExchangeTransport } from '../../lib/connectors/aws/cluster/exchange/index.ts';
import type { WorkerSettings } from '../../lib/cli/worker-command.ts';
import { DynamoDbLeaseKeeper } from '../../lib/connectors/aws/cluster/dynamodb-lease-keeper.ts';
import { WorkerControlTable } from '../../lib/connectors/aws/cluster/worker-control-table.ts';

/** What the worker needs of the control table: the DynamoDB adapters, or in-memory ones in tests. */
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
 * The DynamoDB adapters of the control table for one worker: one WorkerControlTable (ControlReader + AckWriter,
 * consistent reads, acks as TransactWriteItems [ConditionCheck lease owner+epoch, Put]) shared by the lease keeper.
 * The client takes its endpoint, region and credentials from the SDK's default chains (AWS_ENDPOINT_URL_DYNAMODB
 * for emulators). Closing the keeper forgets the worker's heartbeat; the table's client is closed with the keeper.
 */
export function createWorkerAwsAdapters(request: WorkerAdapterRequest): Promise<WorkerAdapters> {
  const { settings, workerId } = request;
  const table = new WorkerControlTable({ tableName: settings.controlTable, jobId: settings.jobId });
  const keeper = new DynamoDbLeaseKeeper(table, {
    workerId,
    leaseDurationMs: settings.leaseDurationMs,
    ...(settings.maxSlots === undefined ? {} : { maxSlots: settings.maxSlots }),
  });
  const leases: SlotLeaseKeeper = {
    get workerId() {
      return keeper.workerId;
    },
    start: (onEvent) => keeper.start(onEvent),
    held: () => keeper.held(),
    restartLocally: (slot) => keeper.restartLocally(slot),
    handOver: (slot) => keeper.handOver(slot),
    release: (slot) => keeper.release(slot),
    close: async () => {
      try {
        await keeper.close();
      } finally {
        table.close();
      }
    },
  };
  return Promise.resolve({ control: table, acks: table, leases });
}

/**
 * The Kinesis exchange over the internal stream `stream`, checked at start: it must exist with exactly
 * `parallelism` open shards (a ConfigError naming the stream, its shard count and P otherwise: the worker exits 2).
 * The client takes its endpoint, region and credentials from the SDK's default chains (AWS_ENDPOINT_URL_KINESIS
 * for emulators).
 */
export async function createWorkerExchange(stream: string, parallelism: number): Promise<ExchangeTransport> {
  const transport = new KinesisExchangeTransport({ stream, parallelism });
  await transport.check();
  return transport;
}
