/**
 * Per-account transaction totals in tumbling event-time windows, from a Kinesis stream into a DynamoDB table,
 * exactly once.
 *
 *   npx sluice run examples/kinesis-to-dynamodb.ts --stream NAME --table NAME --checkpoint-dir s3://BUCKET/PREFIX
 *     [--parallelism N] [--max-delay-ms 5000] [--window-ms 10000] [--stop-when-idle-ms N] [--create-table]
 *     [--marker-table NAME] [--dead-letter-stream NAME | --dead-letter-s3 s3://BUCKET/PREFIX]
 *
 * Input: the same JSON transactions as examples/fraud-detection.ts, {"account":"a-17","amountCents":1250,"ts":…}
 * (ts = event time, epoch ms), one per Kinesis record, partition key = account.
 * Records are checked as in examples/fraud-detection.ts (parseTransaction: amountCents a safe integer, ts whole
 * epoch ms within ±8.64e15); rejected ones go to the dead-letter stream or S3 prefix with the reason.
 * Output: one item per account and window, {account (S, partition key), windowStart (N, sort key), windowEnd (N),
 * count (N), totalCents (N)}, written with TransactWriteItems after each completed checkpoint; a commit replayed
 * after a recovery changes nothing (commit markers, kept in their own table, --marker-table, so the result table holds
 * only results; markers expire after 30 days through DynamoDB's time to live).
 * --create-table creates, unless they exist (on-demand capacity): the result table, the marker table and, when
 * SLUICE_CHECKPOINT_COMMIT_TABLE names one, the checkpoint commit table of the S3 checkpoint storage.
 * With --stop-when-idle-ms, once no shard has had a new record for that long the input counts as ended: every window
 * fires, the final checkpoint commits, and the job exits 0.
 * Malformed records go to the dead-letter stream or S3 prefix with shard id and sequence number (else they are
 * counted on stderr). Endpoints come from AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_KINESIS / _DYNAMODB / _S3, region and
 * credentials from the default chain: the same command runs against AWS, LocalStack and the emulators.
 */
import { ConfigError, TumblingEventTimeWindows, WatermarkStrategy, defineJob } from 'sluice';
import {
  dynamoDbSink,
  ensureCheckpointCommitTable,
  ensureTable,
  kinesisDeadLetterWriter,
  kinesisSource,
  s3DeadLetterWriter,
  type DeadLetterWriter,
} from 'sluice/aws';
import { countAndSum, parseTransaction, toAccountWindowTotal, type AccountWindowTotal, type Transaction } from './fraud-detection.ts';

export default defineJob({
  name: 'kinesis-to-dynamodb',
  description: 'per-account transaction count and total in tumbling event-time windows, Kinesis to DynamoDB, exactly once',
  flags: {
    stream: { type: 'string', required: true, description: 'Kinesis stream of JSON transactions {account, amountCents, ts}' },
    table: { type: 'string', required: true, description: 'DynamoDB table for the window totals (account S / windowStart N)' },
    maxDelayMs: {
      type: 'number',
      integer: true,
      min: 0,
      default: 5000,
      description: 'how far (ms) events may arrive out of order before they are late',
    },
    windowMs: { type: 'number', integer: true, min: 1, default: 10000, description: 'window size in ms' },
    stopWhenIdleMs: {
      type: 'number',
      integer: true,
      min: 1,
      description: 'end the input once no shard had a new record for this long: fire all windows, commit, exit 0',
    },
    markerTable: {
      type: 'string',
      description: 'DynamoDB table for the sink\'s commit markers (pk S); default: the --table name + "-markers"',
    },
    createTable: {
      type: 'boolean',
      description: 'create the result, marker and checkpoint commit tables (on-demand) unless they exist',
    },
    deadLetterStream: { type: 'string', description: 'Kinesis stream for malformed records (with shard id and sequence number)' },
    deadLetterS3: { type: 'string', description: 's3://bucket/prefix for malformed records (one object per batch)' },
  },
  async build(env, flags) {
    const markerTable = flags.markerTable ?? `${flags.table}-markers`;
    if (flags.createTable === true) await createTables(flags.table, markerTable);
    const deadLetters = deadLetterTarget(flags.deadLetterStream, flags.deadLetterS3);
    const transactions = env.fromSource(
      kinesisSource<Transaction>({
        stream: flags.stream,
        startPosition: 'TRIM_HORIZON',
        deserializer: (data) => parseTransaction(JSON.parse(Buffer.from(data).toString('utf8'))),
        ...(deadLetters === undefined ? {} : { deadLetters }),
        ...(flags.stopWhenIdleMs === undefined ? {} : { stopWhenIdleMs: flags.stopWhenIdleMs }),
      }),
      WatermarkStrategy.forBoundedOutOfOrderness<Transaction>(flags.maxDelayMs)
        .withTimestampAssigner((t) => t.ts)
        .withIdleness(Math.max(1000, flags.maxDelayMs)),
      'transactions',
    );
    transactions
      .keyBy((t) => t.account)
      .window(TumblingEventTimeWindows.of(flags.windowMs))
      .aggregate(countAndSum, toAccountWindowTotal, 'account totals')
      .sinkTo(
        dynamoDbSink<AccountWindowTotal>({
          table: flags.table,
          partitionKey: 'account',
          sortKey: 'windowStart',
          jobId: `kinesis-to-dynamodb.${flags.table}`,
          marker: { table: markerTable, partitionKey: MARKER_KEY },
          toWrites: (t) => ({ type: 'put', item: { ...t } }),
        }),
        'window totals',
      );
  },
});

const MARKER_KEY = 'pk';
const MARKER_TTL_ATTRIBUTE = 'sluiceMarkerExpiresAt';

/**
 * The tables of --create-table. The checkpoint commit table is the one S3 checkpoint storage reads from
 * SLUICE_CHECKPOINT_COMMIT_TABLE (its 'dynamodb' commit mode); build() runs before the job opens its checkpoints.
 */
async function createTables(table: string, markerTable: string): Promise<void> {
  const commitTable = process.env['SLUICE_CHECKPOINT_COMMIT_TABLE'];
  await Promise.all([
    ensureTable({ tableName: table, partitionKey: { name: 'account', type: 'S' }, sortKey: { name: 'windowStart', type: 'N' } }),
    // The sink's default marker expiry attribute: DynamoDB deletes markers once they expire.
    ensureTable({ tableName: markerTable, partitionKey: { name: MARKER_KEY, type: 'S' }, timeToLiveAttribute: MARKER_TTL_ATTRIBUTE }),
    commitTable !== undefined && commitTable !== '' && process.env['SLUICE_CHECKPOINT_COMMIT_MODE'] !== 's3-conditional'
      ? ensureCheckpointCommitTable(commitTable)
      : undefined,
  ]);
}

function deadLetterTarget(stream: string | undefined, s3: string | undefined): (() => DeadLetterWriter) | undefined {
  if (stream !== undefined && s3 !== undefined) throw new ConfigError('pass only one of --dead-letter-stream and --dead-letter-s3');
  if (stream !== undefined) return () => kinesisDeadLetterWriter({ stream });
  if (s3 !== undefined) return () => s3DeadLetterWriter({ location: s3 });
  return undefined;
}
