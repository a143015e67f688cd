import type { AckWriter, ControlReader, SlotLeaseKeeper } from '../../lib/cluster/ports.ts';
import type { ExchangeTransport } from '../../lib/cluster/exchange/index.ts';
import { KinesisExchangeTransport } from '../../lib/connectors/aws/cluster/exchange/index.ts';
import type { WorkerSettings } from '../../lib/cli/worker-command.ts';
import { DynamoDbLeaseKeeper } from '../../lib/connectors/aws/cluster/dynamodb-lease-keeper.ts';
import { WorkerControlTable } from '../../lib/connectors/aws/cluster/worker-control-table.ts';
import { leaseDurationFor } from '../../lib/runtime/cluster/stored-config-check.ts';

/** What the worker needs of the control table: the DynamoDB adapters, or in-memory ones in tests. */
export interface WorkerAdapters {
  readonly control: ControlReader;
  readonly acks: AckWriter;
  readonly leases: SlotLeaseKeeper;
}

export interface WorkerAdapterRequest {
  readonly settings: WorkerSettings;
  readonly workerId: string;
  /** A lease round or renewal failed (missing permission, malformed item, throttling): it is tried again at the
   * next round, but the worker's log must say so, else the worker silently holds no slots. @default ignored */
  readonly onLeaseError?: (error: unknown) => void;
}

/**
 * The DynamoDB adapters of the control table for one worker: one WorkerControlTable (ControlReader + AckWriter,
 * consistent reads, acks as TransactWriteItems [ConditionCheck lease owner+epoch, Put]) shared by the lease keeper,
 * which runs with the job's stored lease duration (leaseDurationFor: ConfigError when a given flag differs).
 * The client takes its endpoint, region and credentials from the SDK's default chains (AWS_ENDPOINT_URL_DYNAMODB
 * for emulators). Closing the keeper forgets the worker's heartbeat; the table's client is closed with the keeper.
 */
export async function createWorkerAwsAdapters(request: WorkerAdapterRequest): Promise<WorkerAdapters> {
  const { settings, workerId } = request;
  const table = new WorkerControlTable({ tableName: settings.controlTable, jobId: settings.jobId });
  let leaseDurationMs: number;
  try {
    // The job's stored lease duration (ConfigError when the worker's flag differs); no config yet: the worker refuses to start anyway.
    const config = await table.readConfig();
    leaseDurationMs = config === undefined ? settings.leaseDurationMs : leaseDurationFor(config, settings);
  } catch (error) {
    table.close();
    throw error;
  }
  const keeper = new DynamoDbLeaseKeeper(table, {
    workerId,
    leaseDurationMs,
    ...(settings.maxSlots === undefined ? {} : { maxSlots: settings.maxSlots }),
    ...(request.onLeaseError === undefined ? {} : { onError: request.onLeaseError }),
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
  return { control: table, acks: table, leases };
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
