import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ConfigError } from '../../lib/core/index.ts';
import type { DeadLetter } from '../../lib/connectors/aws/dead-letter.ts';
import { S3DeadLetterError, S3DeadLetterWriter } from '../../lib/connectors/aws/s3/s3-dead-letter-writer.ts';
import { startS3Emulator, type S3Emulator } from '../harness/aws/s3-emulator.ts';

let s3: S3Emulator;

beforeAll(async () => {
  s3 = await startS3Emulator({ buckets: ['dead-letters'] });
});

afterAll(async () => {
  await s3?.stop();
});

const letter = (n: number): DeadLetter => ({
  source: 'orders',
  shardId: 'shardId-000000000001',
  sequenceNumber: String(1000 + n),
  partitionKey: `k${n}`,
  approximateArrivalTimestamp: 1_700_000_000_000 + n,
  data: Buffer.from(`not json ${n}`).toString('base64'),
  reason: 'Unexpected token',
});

describe('S3DeadLetterWriter', () => {
  it('writes each batch as one JSON Lines object under a dated prefix, never overwriting', async () => {
    const writer = new S3DeadLetterWriter({ location: 's3://dead-letters/jobs/orders', aws: s3.clientConfig, now: () => Date.UTC(2024, 4, 17, 12) });
    await writer.write([letter(1), letter(2)]);
    await writer.write([letter(1)]);
    await writer.write([]);
    writer.close();
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: 'dead-letters', Prefix: 'jobs/orders/' }));
    const keys = (listed.Contents ?? []).map((c) => c.Key!).sort();
    expect(keys).toHaveLength(2);
    for (const key of keys) expect(key).toMatch(/^jobs\/orders\/dt=2024-05-17\/1715947200000-[0-9a-f]{12}-[12]\.jsonl$/);
    const first = await s3.client.send(new GetObjectCommand({ Bucket: 'dead-letters', Key: keys.find((k) => k.endsWith('-1.jsonl')) }));
    const lines = (await first.Body!.transformToString()).trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([
      { ...letter(1), approximateArrivalTimestamp: 1_700_000_000_001 },
      { ...letter(2), approximateArrivalTimestamp: 1_700_000_000_002 },
    ]);
  });

  it('fails with a typed error naming the object, retriable only for transient failures', async () => {
    const writer = new S3DeadLetterWriter({ location: 's3://no-such-bucket/x', aws: s3.clientConfig, retry: { maxAttempts: 2, baseDelayMs: 1 } });
    const error = await writer.write([letter(1)]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(S3DeadLetterError);
    expect((error as S3DeadLetterError).retriable).toBe(false);
    expect((error as Error).message).toContain('s3://no-such-bucket/x/dt=');
    writer.close();
    expect(() => new S3DeadLetterWriter({ location: 'dead-letters/x' })).toThrow(ConfigError);
  });
});
