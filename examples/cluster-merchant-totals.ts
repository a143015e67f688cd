/**
 * Running per-merchant transaction count and total, from a Kinesis stream partitioned by ACCOUNT into a DynamoDB
 * table, exactly once. The keyBy on the merchant is not aligned with the stream's partition key, so in a cluster
 * it crosses slots through the internal exchange stream (read-committed; see docs/cluster.md "Exchange data path"):
 *
 *   aws kinesis create-stream --stream-name totals-exchange --shard-count 2      # exactly P shards
 *   npx sluice aws init examples/cluster-merchant-totals.ts --job-id merchants --control-table T \
 *     --checkpoint-dir s3://BUCKET/PREFIX --parallelism 2 --exchange-stream totals-exchange --stream NAME --table NAME
 *   npx sluice worker examples/cluster-merchant-totals.ts --job-id merchants --control-table T ... \
 *     --exchange-stream totals-exchange --stream NAME --table NAME
 *
 * Input: JSON transactions {"account":"a-17","merchant":"m-3","amountCents":1250,"ts":…}, partition key = account.
 * Malformed records are counted and skipped.
 * Output: one item per merchant {merchant (S, partition key), count (N), totalCents (N)}, the running totals as of
 * the last committed checkpoint (a record reaches them about one checkpoint interval later than in the aligned
 * examples/cluster-account-totals.ts: the exchange hop).
 */
import { WatermarkStrategy, defineJob } from 'sluice';
import { dynamoDbSink, kinesisSource } from 'sluice/aws';
import { parseTransaction, type Transaction } from './fraud-detection.ts';

export interface MerchantTransaction extends Transaction {
  readonly merchant: string;
}

export interface MerchantTotal {
  readonly merchant: string;
  readonly count: number;
  readonly totalCents: number;
}

/** A transaction with a merchant: parseTransaction's checks, plus a non-empty "merchant" string. */
export function parseMerchantTransaction(value: unknown): MerchantTransaction {
  const t = parseTransaction(value);
  const merchant = (value as Record<string, unknown>)['merchant'];
  if (typeof merchant !== 'string' || merchant.length === 0) throw new Error('"merchant" must be a non-empty string');
  return { ...t, merchant };
}

export default defineJob({
  name: 'cluster-merchant-totals',
  description: 'running per-merchant transaction count and total, Kinesis (by account) to DynamoDB, through the exchange',
  flags: {
    stream: { type: 'string', required: true, description: 'Kinesis stream of JSON transactions, partition key = account' },
    table: { type: 'string', required: true, description: 'DynamoDB table for the totals (merchant S)' },
    markerTable: {
      type: 'string',
      description: 'DynamoDB table for the sink\'s commit markers (pk S); default: the --table name + "-markers"',
    },
  },
  build(env, flags) {
    const markerTable = flags.markerTable ?? `${flags.table}-markers`;
    env
      .fromSource(
        kinesisSource<MerchantTransaction>({
          stream: flags.stream,
          startPosition: 'TRIM_HORIZON',
          deserializer: (data) => parseMerchantTransaction(JSON.parse(Buffer.from(data).toString('utf8'))),
        }),
        WatermarkStrategy.noWatermarks<MerchantTransaction>(),
        'transactions',
      )
      .map((t): MerchantTotal => ({ merchant: t.merchant, count: 1, totalCents: t.amountCents }), 'one')
      // The stream is partitioned by account: a merchant's records arrive in every slot and meet in one.
      .keyBy((t) => t.merchant)
      .reduce((a, b) => ({ merchant: a.merchant, count: a.count + b.count, totalCents: a.totalCents + b.totalCents }), 'running totals')
      .sinkTo(
        dynamoDbSink<MerchantTotal>({
          table: flags.table,
          partitionKey: 'merchant',
          jobId: `cluster-merchant-totals.${flags.table}`,
          marker: { table: markerTable, partitionKey: 'pk' },
          toWrites: (t) => ({ type: 'put', item: { ...t } }),
        }),
        'merchant totals',
      );
  },
});
