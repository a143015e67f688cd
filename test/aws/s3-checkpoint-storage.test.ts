import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { checkpointDirName, metadataPath, taskStateFileName, taskStatePath } from '../../lib/checkpoint/naming.ts';
import type { SharedFileEntry } from '../../lib/checkpoint/types.ts';
import { InternalError } from '../../lib/core/index.ts';
import { CheckpointCorruptError, CheckpointIoError, decodeTaskSnapshot } from '../../lib/storage/index.ts';
import { S3CheckpointStorage } from '../../lib/connectors/aws/s3/s3-checkpoint-storage.ts';
import { ensureCheckpointCommitTable } from '../../lib/connectors/aws/s3/ensure-commit-table.ts';
import { latestWithSkips as latestSkipping, writeTestCheckpoint, type TestCheckpointOptions } from '../harness/checkpoint-storage-fixtures.ts';
import { startS3Emulator, type S3Emulator } from '../harness/aws/s3-emulator.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';

const BUCKET = 'checkpoints';
const COMMIT_TABLE = 'sluice-checkpoint-commits';
const MiB = 1024 * 1024;

let s3: S3Emulator;
let dynamo: DynamoDbLocal;
let work: string;
let prefixCounter = 0;
let prefix: string;
let storage: S3CheckpointStorage;
/** Commands the storage's S3 client sent, in order (its middleware records them). */
let commands: string[];
/** Makes the next S3 call of the given command fail once (injected before it is sent). */
let failNext: { command: string; keySuffix: string } | undefined;

function s3ClientWithProbe(): S3Client {
  const client = new S3Client({ ...s3.clientConfig, forcePathStyle: true, requestHandler: new NodeHttpHandler() });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      commands.push(context.commandName ?? '');
      const key = (args.input as { Key?: string }).Key ?? '';
      if (failNext !== undefined && context.commandName === failNext.command && key.endsWith(failNext.keySuffix)) {
        failNext = undefined;
        throw Object.assign(new Error('injected failure'), { name: 'InternalError', $metadata: { httpStatusCode: 500 } });
      }
      return next(args);
    },
    { step: 'initialize', name: 'probe' },
  );
  return client;
}

function newStorage(options: { prefix?: string; s3Client?: S3Client } = {}): S3CheckpointStorage {
  return new S3CheckpointStorage({
    bucket: BUCKET,
    prefix: options.prefix ?? prefix,
    commitTable: COMMIT_TABLE,
    partSizeBytes: 5 * MiB,
    aws: s3.clientConfig,
    s3Client: options.s3Client ?? s3ClientWithProbe(),
    dynamoDbClient: dynamo.client,
  });
}

beforeAll(async () => {
  [s3, dynamo] = await Promise.all([startS3Emulator({ buckets: [BUCKET] }), startDynamoDbLocal()]);
  await ensureCheckpointCommitTable(COMMIT_TABLE, { client: dynamo.client });
  work = await mkdtemp(join(tmpdir(), 'sluice-s3-chk-'));
}, 180_000); // DynamoDB Local (a JVM) can take a minute or more to start on a loaded machine

afterAll(async () => {
  await Promise.all([s3?.stop(), dynamo?.stop()]);
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

beforeEach(() => {
  commands = [];
  failNext = undefined;
  prefix = `jobs/job-${++prefixCounter}`;
  storage = newStorage();
});

const chk = (id: number) => ({ kind: 'checkpoint' as const, checkpointId: id });
const keyOf = (path: string, p = prefix) => `${p}/${path}`;

async function putRaw(path: string, body: Uint8Array | string): Promise<void> {
  await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: keyOf(path), Body: body }));
}

async function getRaw(path: string): Promise<Buffer> {
  const out = await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: keyOf(path) }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

async function keysUnder(path: string): Promise<string[]> {
  const out = await s3.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: keyOf(path) }));
  return (out.Contents ?? []).map((c) => c.Key!.slice(prefix.length + 1)).sort();
}

async function exists(path: string): Promise<boolean> {
  return (await keysUnder(path)).includes(path);
}

/** Writes checkpoint `id` (two tasks) to `options.on`, by default the test's storage. */
const writeCheckpoint = (id: number, options: TestCheckpointOptions & { on?: S3CheckpointStorage } = {}) =>
  writeTestCheckpoint(options.on ?? storage, id, options);
const latestWithSkips = (on = storage) => latestSkipping(on);

/** Puts a shared file through the storage from local bytes. */
async function putShared(name: string, bytes: Uint8Array): Promise<SharedFileEntry> {
  const local = join(work, `${prefixCounter}-${name}`);
  await writeFile(local, bytes);
  return storage.sharedState.put(name, local);
}

describe('S3CheckpointStorage (s3rver + DynamoDB Local commit table)', () => {
  it('starts empty when nothing is under the prefix', async () => {
    expect(await storage.list()).toEqual([]);
    expect(await storage.latestComplete()).toBeUndefined();
    expect(await storage.removeIncomplete()).toEqual([]);
    expect(storage.location).toBe(`s3://${BUCKET}/${prefix}`);
    expect(storage.commitMode).toBe('dynamodb');
  });

  it('writes task state, commits metadata, lists and reads it back verified', async () => {
    const metadata = await writeCheckpoint(1);
    expect(metadata.tasks[0]?.path).toBe(`${checkpointDirName(1)}/task-1-0.state`);
    expect(await storage.list()).toEqual([{ status: 'complete', checkpointId: 1, metadata }]);
    expect(await storage.latestComplete()).toEqual(metadata);
    const handle = metadata.tasks[1]!;
    const snapshot = decodeTaskSnapshot(await storage.readTaskState(handle.path, handle), handle.path);
    expect(snapshot.operators[0]?.operatorState).toEqual([{ id: 1, subtask: 1 }]);
    expect(await keysUnder(checkpointDirName(1))).toEqual(['chk-0000000001/_metadata', 'chk-0000000001/task-1-0.state', 'chk-0000000001/task-1-1.state']);
    // A second storage object on the same location (a restarted job) sees the same.
    expect(await newStorage().latestComplete()).toEqual(metadata);
  });

  it('uploads a task file larger than the part size in parts and verifies it', async () => {
    const data = randomBytes(11 * MiB + 17);
    commands = [];
    const written = await storage.writeTaskState(1, taskStateFileName({ vertex: 2, subtask: 3 }), data);
    expect(commands.filter((c) => c === 'UploadPartCommand')).toHaveLength(3);
    expect(commands).toContain('CompleteMultipartUploadCommand');
    expect(written).toEqual({ path: 'chk-0000000001/task-2-3.state', bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') });
    const metadata = await writeCheckpoint(1, { commit: false });
    await storage.commitMetadata({ ...metadata, tasks: [...metadata.tasks, { task: { vertex: 2, subtask: 3 }, vertexName: 'Big', ...written }] });
    expect((await latestWithSkips()).id).toBe(1);
    expect(Buffer.from(await storage.readTaskState(written.path, written)).equals(data)).toBe(true);
  });

  it('lists newest first and restores the newest complete one', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2);
    await writeCheckpoint(10);
    expect((await storage.list()).map((c) => c.checkpointId)).toEqual([10, 2, 1]);
    expect((await latestWithSkips()).id).toBe(10);
  });

  it('trusts neither task files without a commit nor a metadata object without a commit record', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2, { commit: false });
    // A metadata object that no commit record vouches for (written by something else than the commit).
    const stray = await writeCheckpoint(3, { commit: false });
    await putRaw(metadataPath(chk(3)), Buffer.from(JSON.stringify(stray)));
    expect((await storage.list()).map((c) => c.checkpointId)).toEqual([1]);
    expect(await latestWithSkips()).toEqual({ id: 1, skipped: [] });
  });

  it('removeIncomplete deletes uncommitted checkpoints, half-finished commits and orphan shared files', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2, { commit: false });
    await writeCheckpoint(3);
    // A commit record whose metadata upload never happened (crash between the two writes).
    await dynamo.client.send(
      new PutItemCommand({
        TableName: COMMIT_TABLE,
        Item: { location: { S: storage.location }, checkpointId: { N: '4' }, metadataPath: { S: metadataPath(chk(4)) }, sha256: { S: '0'.repeat(64) }, bytes: { N: '10' } },
      }),
    );
    await putRaw(taskStatePath(chk(4), { vertex: 1, subtask: 0 }), 'partial');
    await putRaw('notes.txt', 'not a checkpoint');
    const kept = await putShared('kept.sst', Buffer.from('kept'));
    await writeCheckpoint(5, { shared: [kept] });
    await putShared('orphan.sst', Buffer.from('written by checkpoint 2, which never completed'));

    expect(await storage.removeIncomplete()).toEqual([2, 4]);
    expect(await keysUnder(checkpointDirName(2))).toEqual([]);
    expect(await keysUnder(checkpointDirName(4))).toEqual([]);
    expect(await exists('notes.txt')).toBe(true);
    expect(await keysUnder('shared/')).toEqual(['shared/kept.sst']);
    expect((await storage.list()).map((c) => c.checkpointId)).toEqual([5, 3, 1]);
    expect((await latestWithSkips()).id).toBe(5);
    expect(await storage.removeIncomplete()).toEqual([]);
  });

  it('falls back to the previous checkpoint when the newest metadata object is overwritten or altered', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2);
    await writeCheckpoint(3);
    await putRaw(metadataPath(chk(3)), 'garbage');
    const bytes = await getRaw(metadataPath(chk(2)));
    bytes.writeUInt8(bytes.readUInt8(60) ^ 0x01, 60);
    await putRaw(metadataPath(chk(2)), bytes);
    const listed = await storage.list();
    expect(listed.map((c) => `${c.checkpointId}:${c.status}`)).toEqual(['3:corrupt', '2:corrupt', '1:complete']);
    const { id, skipped } = await latestWithSkips();
    expect(id).toBe(1);
    expect(skipped.map(([skippedId]) => skippedId)).toEqual([3, 2]);
    expect(skipped[0]?.[1]).toContain(`s3://${BUCKET}/${keyOf(metadataPath(chk(3)))}`);
    expect(skipped[1]?.[1]).toMatch(/differs from the metadata that was committed/);
  });

  it('falls back when a task file has the right size but the wrong sha256, and readTaskState refuses it', async () => {
    await writeCheckpoint(1);
    const newest = await writeCheckpoint(2);
    const handle = newest.tasks[1]!;
    const bytes = await getRaw(handle.path);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
    await putRaw(handle.path, bytes);

    const { id, skipped } = await latestWithSkips();
    expect(id).toBe(1);
    expect(skipped).toHaveLength(1);
    expect(skipped[0]?.[1]).toContain('task-1-1.state');
    expect(skipped[0]?.[1]).toContain('sha256');
    const error = await storage.readTaskState(handle.path, handle).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointCorruptError);
    expect((error as CheckpointCorruptError).retriable).toBe(false);
    expect((error as CheckpointCorruptError).path).toBe(`s3://${BUCKET}/${keyOf(handle.path)}`);
  });

  it('falls back when a task file is missing or has the wrong size, or a shared file is missing', async () => {
    await writeCheckpoint(1);
    const second = await writeCheckpoint(2);
    const third = await writeCheckpoint(3);
    const gone = await putShared('gone.sst', Buffer.from('x'));
    await writeCheckpoint(4, { shared: [gone] });
    await storage.sharedState.remove([gone.path]);
    await s3.client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: keyOf(third.tasks[0]!.path) }));
    await putRaw(second.tasks[0]!.path, Buffer.concat([await getRaw(second.tasks[0]!.path), Buffer.from([1])]));
    const { id, skipped } = await latestWithSkips();
    expect(id).toBe(1);
    expect(skipped.map(([skippedId]) => skippedId)).toEqual([4, 3, 2]);
    expect(skipped[0]?.[1]).toContain('shared state file is missing');
    expect(skipped[1]?.[1]).toContain('missing');
    expect(skipped[2]?.[1]).toMatch(/bytes, the metadata says/);
    await expect(storage.readTaskState(third.tasks[0]!.path, third.tasks[0]!)).rejects.toThrow(/missing/);
  });

  it('returns undefined, with warnings, when every checkpoint is corrupt', async () => {
    await writeCheckpoint(1);
    await putRaw(metadataPath(chk(1)), 'garbage');
    const { id, skipped } = await latestWithSkips();
    expect(id).toBeUndefined();
    expect(skipped.map(([skippedId]) => skippedId)).toEqual([1]);
  });

  it('refuses task paths outside the naming scheme', async () => {
    await expect(storage.readTaskState('../secret.state', { bytes: 0, sha256: '0'.repeat(64) })).rejects.toBeInstanceOf(CheckpointCorruptError);
    await expect(storage.writeTaskState(1, '../escape.state', new Uint8Array(1))).rejects.toBeInstanceOf(InternalError);
    await expect(storage.sharedState.get({ path: 'shared/../x', bytes: 0, sha256: '0'.repeat(64) }, join(work, 'x'))).rejects.toBeInstanceOf(CheckpointCorruptError);
  });

  it('reports I/O failures as retriable CheckpointIoErrors naming the location', async () => {
    const broken = new S3CheckpointStorage({ bucket: 'no-such-bucket', prefix: 'p', commitTable: COMMIT_TABLE, s3Client: s3ClientWithProbe(), dynamoDbClient: dynamo.client });
    const error = await broken.writeTaskState(1, taskStateFileName({ vertex: 0, subtask: 0 }), new Uint8Array(4)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointIoError);
    expect((error as CheckpointIoError).retriable).toBe(true);
    expect((error as CheckpointIoError).message).toContain('s3://no-such-bucket/p/chk-0000000001/task-0-0.state');
    expect((error as CheckpointIoError).cause).toBeDefined();
    await expect(broken.list()).rejects.toBeInstanceOf(CheckpointIoError);
  });

  it('refuses to commit the same checkpoint twice', async () => {
    const metadata = await writeCheckpoint(1);
    await expect(storage.commitMetadata({ ...metadata, completedAt: metadata.completedAt + 1 })).rejects.toBeInstanceOf(InternalError);
    expect(await storage.latestComplete()).toEqual(metadata);
  });

  it('lets exactly one of two concurrent commits of one id win, and keeps the winner\'s metadata', async () => {
    const other = newStorage();
    const mine = await writeCheckpoint(7, { commit: false });
    const theirs = { ...mine, completedAt: mine.completedAt + 1 };
    const results = await Promise.allSettled([storage.commitMetadata(mine), other.commitMetadata(theirs)]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]?.reason).toBeInstanceOf(InternalError);
    expect(String((lost[0]?.reason as Error).message)).toMatch(/already committed/);
    const winner = results[0]?.status === 'fulfilled' ? mine : theirs;
    expect(await storage.latestComplete()).toEqual(winner);
    expect(await other.latestComplete()).toEqual(winner);
  });

  it('a commit whose metadata upload failed can be retried with the same metadata', async () => {
    const metadata = await writeCheckpoint(1, { commit: false });
    failNext = { command: 'PutObjectCommand', keySuffix: '/_metadata' };
    await expect(storage.commitMetadata(metadata)).rejects.toBeInstanceOf(CheckpointIoError);
    expect(await storage.list()).toEqual([]);
    await storage.commitMetadata(metadata);
    expect(await storage.latestComplete()).toEqual(metadata);
  });

  it('retention keeps exactly the newest N complete checkpoints and their files', async () => {
    for (const id of [1, 2, 3, 4, 5]) await writeCheckpoint(id);
    expect(await storage.applyRetention(2)).toEqual([1, 2, 3]);
    const remaining = await storage.list();
    expect(remaining.map((c) => c.checkpointId)).toEqual([5, 4]);
    for (const checkpoint of remaining) {
      if (checkpoint.status !== 'complete') throw new Error('expected complete checkpoints');
      for (const task of checkpoint.metadata.tasks) await storage.readTaskState(task.path, task);
    }
    expect(await keysUnder(checkpointDirName(3))).toEqual([]);
    expect(await storage.applyRetention(2)).toEqual([]);
    expect(await storage.applyRetention(5)).toEqual([]);
    expect((await storage.list()).map((c) => c.checkpointId)).toEqual([5, 4]);
  });

  it('retention skips corrupt checkpoints when counting, leaves newer work alone and keeps savepoints', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2, { savepoint: true });
    await writeCheckpoint(3, { commit: false }); // abandoned, older than what is retained
    await writeCheckpoint(4);
    await writeCheckpoint(5);
    await putRaw(metadataPath(chk(5)), 'garbage'); // corrupt, newer than what is retained
    await writeCheckpoint(6);
    await writeCheckpoint(7, { commit: false }); // in flight

    expect(await storage.applyRetention(2)).toEqual([1, 3]);
    expect((await storage.list()).map((c) => `${c.checkpointId}:${c.status}`)).toEqual(['6:complete', '5:corrupt', '4:complete', '2:complete']);
    expect(await exists(taskStatePath(chk(7), { vertex: 1, subtask: 0 }))).toBe(true);
    expect((await latestWithSkips()).id).toBe(6);
  });

  it('retention never deletes a folder that a retained checkpoint points into', async () => {
    const first = await writeCheckpoint(1);
    await writeCheckpoint(2);
    const third = await writeCheckpoint(3, { commit: false });
    await storage.commitMetadata({ ...third, tasks: [first.tasks[0]!, third.tasks[1]!] });
    expect(await storage.applyRetention(1)).toEqual([2]);
    expect((await latestWithSkips()).id).toBe(3);
  });

  it('retention keeps a shared file while a kept checkpoint lists it and deletes it when none does', async () => {
    const a = await putShared('a.sst', Buffer.from('a'));
    const b = await putShared('b.sst', Buffer.from('b'));
    const c = await putShared('c.sst', Buffer.from('c'));
    const d = await putShared('d.sst', Buffer.from('d'));
    await writeCheckpoint(1, { shared: [a] });
    await writeCheckpoint(2, { shared: [a, b] });
    await writeCheckpoint(3, { shared: [a, c] });
    await writeCheckpoint(4, { shared: [c, d] });

    expect(await storage.applyRetention(2)).toEqual([1, 2]);
    expect(await keysUnder('shared/')).toEqual(['shared/a.sst', 'shared/c.sst', 'shared/d.sst']);
    expect((await latestWithSkips()).id).toBe(4);

    expect(await storage.applyRetention(1)).toEqual([3]);
    expect(await keysUnder('shared/')).toEqual(['shared/c.sst', 'shared/d.sst']);
    const restored = join(work, `restored-${prefixCounter}`);
    await storage.sharedState.get(c, restored);
    expect(await readFile(restored, 'utf8')).toBe('c');
  });

  it('discard removes a checkpoint and its commit record, and is idempotent', async () => {
    await writeCheckpoint(1);
    await writeCheckpoint(2);
    await storage.discard(2);
    expect(await keysUnder(checkpointDirName(2))).toEqual([]);
    await storage.discard(2);
    await storage.discard(99);
    expect((await latestWithSkips()).id).toBe(1);
    // The id is free again for the commit point (ids are never reused by the coordinator, but discard is complete).
    await writeCheckpoint(2);
    expect((await latestWithSkips()).id).toBe(2);
  });

  it('rejects a retention count below one', async () => {
    await expect(storage.applyRetention(0)).rejects.toThrow(/at least 1/);
  });

  it('keeps job records beside the checkpoints', async () => {
    expect(await storage.records.read('restore.json')).toBeUndefined();
    await storage.records.write('restore.json', '{"a":1}');
    await storage.records.write('restore.json', '{"a":2}');
    expect(await storage.records.read('restore.json')).toBe('{"a":2}');
    await writeCheckpoint(1);
    expect((await storage.list()).map((c) => c.checkpointId)).toEqual([1]);
    await storage.records.remove('restore.json');
    await storage.records.remove('restore.json');
    expect(await storage.records.read('restore.json')).toBeUndefined();
  });
});

describe('S3SharedStateStore', () => {
  it('streams a large file up in parts, skips an identical re-put, and verifies on get', async () => {
    const data = randomBytes(6 * MiB + 3);
    commands = [];
    const ref = await putShared('big-000001.sst', data);
    expect(ref).toEqual({ path: 'shared/big-000001.sst', bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') });
    expect(commands.filter((c) => c === 'UploadPartCommand')).toHaveLength(2);
    commands = [];
    expect(await putShared('big-000001.sst', data)).toEqual(ref);
    expect(commands).toEqual(['HeadObjectCommand']);

    const local = join(work, `big-${prefixCounter}`, 'nested', 'copy.sst');
    await storage.sharedState.get(ref, local);
    expect((await readFile(local)).equals(data)).toBe(true);
  });

  it('re-uploads a name whose content differs, and get refuses a file that does not match its reference', async () => {
    const first = await putShared('x.sst', Buffer.from('first'));
    const second = await putShared('x.sst', Buffer.from('second!'));
    expect(second.sha256).not.toBe(first.sha256);
    const local = join(work, `x-${prefixCounter}`);
    const error = await storage.sharedState.get(first, local).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointCorruptError);
    await storage.sharedState.get(second, local);
    expect(await readFile(local, 'utf8')).toBe('second!');
    await expect(storage.sharedState.get({ ...second, path: 'shared/missing.sst' }, local)).rejects.toThrow(/missing/);
    await expect(storage.sharedState.put('../bad', local)).rejects.toThrow(/not a valid shared state file name/);
  });
});

describe('S3CheckpointStorage, commit mode s3-conditional', () => {
  it('commits with If-None-Match and refuses an id whose metadata exists', async () => {
    const client = s3ClientWithProbe();
    const sent: Record<string, unknown>[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'PutObjectCommand') sent.push(args.input as Record<string, unknown>);
        return next(args);
      },
      { step: 'initialize', name: 'capture' },
    );
    const conditional = new S3CheckpointStorage({ bucket: BUCKET, prefix, commitMode: 's3-conditional', s3Client: client });
    expect(conditional.commitMode).toBe('s3-conditional');
    const metadata = await writeCheckpoint(1, { on: conditional });
    expect(sent.find((input) => String(input['Key']).endsWith('/_metadata'))?.['IfNoneMatch']).toBe('*');
    expect(await conditional.latestComplete()).toEqual(metadata);
    await expect(conditional.commitMetadata({ ...metadata, completedAt: 1 })).rejects.toBeInstanceOf(InternalError);
    // A lost race on real S3 answers 412 Precondition Failed: that is a refusal too.
    const second = await writeCheckpoint(2, { on: conditional, commit: false });
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'PutObjectCommand' && String((args.input as { Key?: string }).Key).endsWith('/_metadata')) {
          throw Object.assign(new Error('At least one of the pre-conditions you specified did not hold'), { name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } });
        }
        return next(args);
      },
      { step: 'initialize', name: 'precondition' },
    );
    await expect(conditional.commitMetadata(second)).rejects.toThrow(/already complete/);
    expect((await conditional.list()).map((c) => c.checkpointId)).toEqual([1]);
  });
});
