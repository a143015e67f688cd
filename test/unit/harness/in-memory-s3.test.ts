import { describe, expect, it } from 'vitest';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, paginateListObjectsV2 } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { isPreconditionFailed } from '../../../lib/connectors/aws/s3/s3-objects.ts';
import { InMemoryS3 } from '../../harness/in-memory-s3.ts';

describe('InMemoryS3 (the fake the S3 contract runners use)', () => {
  it('refuses a conditional put on an existing key with 412 PreconditionFailed, and only a conditional one', async () => {
    const s3 = new InMemoryS3();
    const client = s3.client();
    await client.send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: 'one', IfNoneMatch: '*' }));
    const refused = await client.send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: 'two', IfNoneMatch: '*' })).catch((e: unknown) => e);
    expect(isPreconditionFailed(refused)).toBe(true);
    expect((refused as { $metadata: { httpStatusCode: number } }).$metadata.httpStatusCode).toBe(412);
    expect(Buffer.from(s3.object('b', 'k') ?? []).toString()).toBe('one');
    await client.send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: 'three' }));
    const got = await client.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }));
    expect(await got.Body?.transformToString()).toBe('three');
  });

  it('answers missing objects as S3 does (NoSuchKey, NotFound) and deletes idempotently', async () => {
    const client = new InMemoryS3().client();
    await expect(client.send(new GetObjectCommand({ Bucket: 'b', Key: 'x' }))).rejects.toMatchObject({ name: 'NoSuchKey' });
    await expect(client.send(new HeadObjectCommand({ Bucket: 'b', Key: 'x' }))).rejects.toMatchObject({ name: 'NotFound' });
    await client.send(new DeleteObjectCommand({ Bucket: 'b', Key: 'x' }));
  });

  it('lists by prefix and delimiter across pages, and takes uploads through lib-storage', async () => {
    const s3 = new InMemoryS3();
    const client = s3.client();
    for (let i = 0; i < 7; i++) await client.send(new PutObjectCommand({ Bucket: 'b', Key: `p/chk-${i}/_metadata`, Body: `${i}` }));
    await new Upload({ client, params: { Bucket: 'b', Key: 'p/shared/f', Body: Buffer.alloc(3000, 1) } }).done();
    const keys: string[] = [];
    const folders: string[] = [];
    for await (const page of paginateListObjectsV2({ client, pageSize: 2 }, { Bucket: 'b', Prefix: 'p/' })) {
      for (const o of page.Contents ?? []) keys.push(o.Key ?? '');
    }
    for await (const page of paginateListObjectsV2({ client, pageSize: 3 }, { Bucket: 'b', Prefix: 'p/', Delimiter: '/' })) {
      for (const c of page.CommonPrefixes ?? []) folders.push(c.Prefix ?? '');
    }
    expect(keys).toEqual(s3.keys('b'));
    expect(keys).toHaveLength(8);
    expect(folders).toEqual([...Array.from({ length: 7 }, (_, i) => `p/chk-${i}/`), 'p/shared/']);
    expect(s3.object('b', 'p/shared/f')?.byteLength).toBe(3000);
  });
});
