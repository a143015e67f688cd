/**
 * Running per-account transaction count and total, from a Kinesis stream into a DynamoDB table, exactly once, in a
 * form a cluster runs with no shuffle: the keyBy is on the Kinesis partition key (`keyGroups: 'kinesis-hash'`), so
 * each slot reads only its own accounts from the shards (an aligned edge, see docs/cluster.md).
 *
 *   npx sluice aws init examples/cluster-account-totals.ts --job-id totals --control-table T \
 *     --checkpoint-dir s3://BUCKET/PREFIX --parallelism 2 --stream NAME --table NAME
 *   npx sluice worker examples/cluster-account-totals.ts --job-id totals --control-table T ... --stream NAME --table NAME
 *
 * Input: JSON transactions {"account":"a-17","amountCents":1250,"ts":…}, partition key = account (as
 * examples/kinesis-to-dynamodb.ts). Malformed records are counted and skipped.
 * Output: one item per account {account (S, partition key), count (N), totalCents (N)}, the running totals as of the
 * last committed checkpoint. A running sum rather than a window: a cluster job's sources never finish, so its
 * table converges to the totals of everything read, which a test can compare with a plain loop.
 */
import { WatermarkStrategy, defineJob } from 'sluice';
import { dynamoDbSink, kinesisSource } from 'sluice/aws';
import { parseTransaction, type Transaction } from './fraud-detection.ts';

export interface AccountTotal {
  readonly account: string;
  readonly count: number;
  readonly totalCents: number;
}

export default defineJob({
  name: 'cluster-account-totals',
  description: 'running per-account transaction count and total, Kinesis to DynamoDB, aligned on the partition key',
  flags: {
    stream: { type: 'string', required: true, description: 'Kinesis stream of JSON transactions, partition key = account' },
    table: { type: 'string', required: true, description: 'DynamoDB table for the totals (account S)' },
    markerTable: {
      type: 'string',
      description: 'DynamoDB table for the sink\'s commit markers (pk S); default: the --table name + "-markers"',
    },
  },
  build(env, flags) {
    const markerTable = flags.markerTable ?? `${flags.table}-markers`;
    env
      .fromSource(
        kinesisSource<Transaction>({
          stream: flags.stream,
          startPosition: 'TRIM_HORIZON',
          deserializer: (data) => parseTransaction(JSON.parse(Buffer.from(data).toString('utf8'))),
        }),
        WatermarkStrategy.noWatermarks<Transaction>(),
        'transactions',
      )
      .map((t): AccountTotal => ({ account: t.account, count: 1, totalCents: t.amountCents }), 'one')
      // The producer's partition key is the account: each slot reads exactly its accounts, nothing crosses slots.
      .keyBy((t) => t.account, { keyGroups: 'kinesis-hash' })
      .reduce((a, b) => ({ account: a.account, count: a.count + b.count, totalCents: a.totalCents + b.totalCents }), 'running totals')
      .sinkTo(
        dynamoDbSink<AccountTotal>({
          table: flags.table,
          partitionKey: 'account',
          jobId: `cluster-account-totals.${flags.table}`,
          marker: { table: markerTable, partitionKey: 'pk' },
          toWrites: (t) => ({ type: 'put', item: { ...t } }),
        }),
        'account totals',
      );
  },
});
