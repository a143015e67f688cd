import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { ControlKeys, type CoordinatorItem, type RequestItem } from '../../lib/cluster/control-items.ts';
import { checkpointDirName, metadataPath } from '../../lib/checkpoint/naming.ts';
import type { DynamoDbCommitter } from '../../lib/connectors/aws/dynamodb/dynamodb-committer.ts';
import type { DynamoDbCommittable } from '../../lib/connectors/aws/dynamodb/committable.ts';
import { dynamoDbCommitterFromDescriptor } from '../../lib/connectors/aws/dynamodb/external-commit.ts';
import { SinkCommitRegistry, type ExternalCommitterFactory } from '../../lib/connectors/aws/cluster/sink-commit-registry.ts';
import { openS3CheckpointStorage } from '../../lib/connectors/aws/s3/open-s3-checkpoint-storage.ts';
import type { DynamoDbCommitPoint } from '../../lib/connectors/aws/s3/dynamodb-commit-point.ts';
import { CoordinatorControlTable } from '../../lib/connectors/aws/cluster/coordinator-control-table.ts';
import { LocalStepFunctions } from '../../functions/coordinator/local/local-step-functions.ts';
import { handler as recover } from '../../functions/coordinator/recover.ts';
import { handler as trigger } from '../../functions/coordinator/trigger.ts';
import { handler as collectAcks } from '../../functions/coordinator/collect-acks.ts';
import { useSettings } from '../../functions/coordinator/settings.ts';
import {
  BUCKET,
  CONTROL,
  P,
  SINK,
  dynamo,
  expectSinkEqualsReference,
  fakeWorkers,
  newJob,
  s3,
  until,
  useCoordinatorEmulators,
} from './cluster-coordinator-harness.ts';

useCoordinatorEmulators();
describe('cluster coordinator on DynamoDB Local and s3rver', { timeout: 90_000 }, () => {
  it('completes checkpoints and commits their sinks in order, through the ASL run locally', async () => {
    const job = await newJob({ intervalMs: 2000 });
    // The coordinator's own clients, counting its requests (the figures in docs/cluster.md).
    const calls: Record<string, number> = {};
    const count = (service: string) => (name: string | undefined): void => {
      const key = `${service}:${name ?? '?'}`;
      calls[key] = (calls[key] ?? 0) + 1;
    };
    const ddb = new DynamoDBClient({ ...dynamo.clientConfig, requestHandler: new NodeHttpHandler() });
    ddb.middlewareStack.add((next, context) => (args) => (count('dynamodb')(context.commandName), next(args)), { step: 'initialize', name: 'countCalls' });
    const s3c = new S3Client({ ...s3.clientConfig, forcePathStyle: true, requestHandler: new NodeHttpHandler() });
    s3c.middlewareStack.add((next, context) => (args) => (count('s3')(context.commandName), next(args)), { step: 'initialize', name: 'countCalls' });
    useSettings({ ...job.settings, dynamo: ddb, s3: s3c });
    const workers = fakeWorkers(job);
    // Waits as the ASL says (1 s ack polls, the 2 s interval), so the counts are those of a deployment.
    const sfn = await LocalStepFunctions.load({ waitMs: 'asl' });
    const run = sfn.run();
    await until('3 sink commits', () => job.events.filter((e) => e['event'] === 'sinks-committed').length >= 3);
    sfn.stop();
    await run;
    await workers.stop();
    await expectSinkEqualsReference(job);
    const control = await job.control();
    expect(control?.completed?.checkpointId).toBe(Math.max(...job.completed()));
    // The epochs of the acks that completed it (every fake worker acks at epoch 1): exchange receivers need them.
    expect(control?.completed?.slotEpochs).toEqual(Array.from({ length: P }, () => 1));
    // The ack items of ended checkpoints are gone: only the one in flight when the run stopped may keep some.
    const table = new CoordinatorControlTable(dynamo.client, CONTROL, job.jobId);
    for (const id of job.completed()) expect(await table.acks(id), `ack items of checkpoint ${id}`).toEqual([]);
    if (process.env['TRACE_COORDINATOR'] === '1') console.log(JSON.stringify({ completed: job.completed().length, stats: sfn.stats, calls }));
    // `sluice checkpoints` and restores read the same commit records.
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const listed = (await storage.list()).filter((c) => c.status === 'complete').map((c) => c.checkpointId);
    expect(listed.length).toBeGreaterThan(0);
    expect(job.completed()).toEqual(expect.arrayContaining(listed));
  });

  it('aborts a checkpoint when the lease generation moves between trigger and commit; the next one completes', async () => {
    const job = await newJob();
    let bumped: number | undefined;
    const workers = fakeWorkers(job, {
      beforeAck: async (id) => {
        if (bumped === undefined) {
          bumped = id;
          await job.bumpGeneration();
        }
      },
    });
    const sfn = await LocalStepFunctions.load({ waitMs: 100 });
    const run = sfn.run();
    const sinksAfterBump = (): boolean => job.events.some((e) => e['event'] === 'sinks-committed' && bumped !== undefined && (e['checkpointId'] as number) > bumped);
    await until('the sinks of a checkpoint after the bump', sinksAfterBump);
    sfn.stop();
    await run;
    await workers.stop();
    expect(job.completed()).not.toContain(bumped);
    // The aborted checkpoint's committables were never committed: every counter moved once per committed checkpoint.
    await expectSinkEqualsReference(job);
    expect(job.events.some((e) => e['event'] === 'checkpoint-aborted' && e['checkpointId'] === bumped)).toBe(true);
    expect(await new CoordinatorControlTable(dynamo.client, CONTROL, job.jobId).acks(bumped ?? -1)).toEqual([]);
  });

  it('retries CommitSinks that throws once halfway: the repeat changes nothing (request tokens, markers), the table equals the reference', async () => {
    let thrown = false;
    const committers: DynamoDbCommitter[] = [];
    const failingOnce: ExternalCommitterFactory = (descriptor, context) => {
      const real = dynamoDbCommitterFromDescriptor(descriptor, context.dynamoDbClient);
      committers.push(real);
      return {
        async commit(committables) {
          // Half of a checkpoint's committables go through, then the handler dies.
          const half = Math.ceil(committables.length / 2);
          await real.commit(committables.slice(0, half) as DynamoDbCommittable[]);
          if (!thrown) {
            thrown = true;
            throw new Error('injected: CommitSinks dies halfway');
          }
          await real.commit(committables.slice(half) as DynamoDbCommittable[]);
        },
      };
    };
    const job = await newJob({ registry: new SinkCommitRegistry({ dynamodb: failingOnce }) });
    const workers = fakeWorkers(job);
    const sfn = await LocalStepFunctions.load({ waitMs: 100 });
    const run = sfn.run();
    await until('3 sink commits', () => job.events.filter((e) => e['event'] === 'sinks-committed').length >= 3);
    sfn.stop();
    await run;
    await workers.stop();
    expect(thrown).toBe(true);
    // The retry sent the first half again: DynamoDB took it as already done (its request token within 10 minutes,
    // its commit marker after that), so every slot's counter moved once per checkpoint.
    const resent = committers.reduce((n, c) => n + c.stats.committed + c.stats.alreadyCommitted, 0);
    const committed = new Set(job.events.filter((e) => e['event'] === 'sinks-committed').map((e) => e['checkpointId'])).size;
    expect(resent).toBeGreaterThan(committed * P);
    const scan = await dynamo.client.send(new ScanCommand({ TableName: SINK, ConsistentRead: true }));
    const markers = (scan.Items ?? []).map((i) => unmarshall(i) as { pk: string }).filter((i) => i.pk.startsWith(`#sluice-commit#${job.jobId}/`));
    expect(markers.length).toBe(committed * P);
    await expectSinkEqualsReference(job);
  });

  it('with maxChildren 2 continues as new: at least 3 executions and no completed checkpoint lost', async () => {
    const job = await newJob({ cycleSeconds: 1 });
    const workers = fakeWorkers(job);
    const sfn = await LocalStepFunctions.load({ waitMs: 100, input: { maxChildren: 2 } });
    const run = sfn.run();
    await until('3 supervisor executions and 4 checkpoints', () => sfn.stats.supervisorExecutions.length >= 3 && job.completed().length >= 4);
    sfn.stop();
    await run;
    await workers.stop();
    const completed = job.completed();
    expect(new Set(completed).size).toBe(completed.length);
    // Ids only grow across executions: each new execution resumed the coordinator item, none started over.
    expect(completed).toEqual([...completed].sort((a, b) => a - b));
    expect(sfn.stats.cyclesExecutions).toBeGreaterThanOrEqual(4);
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const latest = await storage.latestComplete();
    expect(latest?.checkpointId).toBe(Math.max(...completed));
  });

  it('commits metadata on the lease-generation condition; a repeat of the same bytes is committed whatever the generation', async () => {
    const job = await newJob();
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const point = storage.catalog.commitPoint as DynamoDbCommitPoint;
    const table = new CoordinatorControlTable(dynamo.client, CONTROL, job.jobId);
    const bytes = new TextEncoder().encode('metadata bytes');
    const sha = createHash('sha256').update(bytes).digest('hex');
    await job.bumpGeneration();
    expect(await point.commitConditioned(9, 'chk-9/_metadata', bytes, sha, [table.leaseGenerationCheck(0)])).toBe('refused');
    expect(await point.commitConditioned(9, 'chk-9/_metadata', bytes, sha, [table.leaseGenerationCheck(1)])).toBe('committed');
    await job.bumpGeneration();
    expect(await point.commitConditioned(9, 'chk-9/_metadata', bytes, sha, [table.leaseGenerationCheck(1)])).toBe('committed');
    const other = new TextEncoder().encode('other bytes');
    await expect(point.commitConditioned(9, 'chk-9/_metadata', other, createHash('sha256').update(other).digest('hex'), [table.leaseGenerationCheck(2)])).rejects.toThrow(/already committed/);
    expect((await point.records()).get(9)?.sha256).toBe(sha);
  });

  it('Recover of a new execution finishes the metadata commit a dead handler left pending, with the same bytes', async () => {
    const job = await newJob({ intervalMs: 1 });
    // The metadata upload fails while CollectAcks runs: it dies after persisting the exact metadata.
    let failMetadata = false;
    const faulty = new S3Client({ ...s3.clientConfig, forcePathStyle: true, requestHandler: new NodeHttpHandler() });
    faulty.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Key?: string }).Key ?? '';
        if (failMetadata && context.commandName === 'PutObjectCommand' && key.endsWith('_metadata')) throw new Error('injected: metadata upload lost');
        return next(args);
      },
      { step: 'initialize', name: 'failMetadata' },
    );
    useSettings({ ...job.settings, s3: faulty });
    const workers = fakeWorkers(job);
    await recover({ execution: 'A' });
    await until('a trigger', async () => (await trigger({ execution: 'A' })).phase === 'collect');
    const id = (await job.control())?.trigger?.checkpointId ?? -1;
    await until('the acks of the trigger', async () => (await job.item(ControlKeys.ack(id, P - 1))) !== undefined);
    failMetadata = true;
    await expect(collectAcks({ execution: 'A' })).rejects.toThrow(/metadata/);
    const pending = (await job.item<CoordinatorItem>(ControlKeys.coordinator))?.pendingCommit;
    expect(pending?.checkpointId).toBe(id);
    failMetadata = false;
    expect((await recover({ execution: 'B' })).status).toBe('running');
    await workers.stop();
    expect(job.completed()).toEqual([id]);
    expect((await job.control())?.completed?.checkpointId).toBe(id);
    expect((await job.item<CoordinatorItem>(ControlKeys.coordinator))?.pendingCommit).toBeUndefined();
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const stored = await storage.store.get(metadataPath({ kind: 'checkpoint', checkpointId: id }));
    // The bytes were staged before the first try (not kept in the item): the committed object is exactly them.
    const staged = await storage.store.get(pending?.staged?.path ?? '');
    expect(staged).toBeDefined();
    expect(pending?.metadataJson).toBeUndefined();
    expect(Buffer.from(stored ?? new Uint8Array()).toString('utf8')).toBe(Buffer.from(staged ?? new Uint8Array()).toString('utf8'));
    expect(createHash('sha256').update(stored ?? new Uint8Array()).digest('hex')).toBe(pending?.staged?.sha256);
    await expectSinkEqualsReference(job);
  });

  it('Recover of a halted job deletes shared files no complete checkpoint lists, once older than twice the timeout; of a running job none', async () => {
    const job = await newJob();
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    await storage.store.put('shared/orphan-1.sst', new TextEncoder().encode('x'));
    await recover({ execution: 'A' });
    expect(await storage.sharedState.list()).toEqual(['shared/orphan-1.sst']);
    // The config's timeout is 20 s: an hour later the orphan is old enough, but slots run: a running chain may
    // still reference it (a file of an aborted checkpoint that the next completed one lists again).
    useSettings({ ...job.settings, now: () => Date.now() + 3_600_000 });
    expect((await recover({ execution: 'A' })).status).toBe('running');
    expect(await storage.sharedState.list()).toEqual(['shared/orphan-1.sst']);
    // Halted (every slot stopped at the stop savepoint): now it goes.
    const item = await job.item<CoordinatorItem>(ControlKeys.coordinator);
    await job.put(ControlKeys.coordinator, { ...item, state: { ...item?.state, status: 'halted' } });
    expect((await recover({ execution: 'A' })).status).toBe('halted');
    expect(await storage.sharedState.list()).toEqual([]);
    expect(job.events.some((e) => e['event'] === 'shared-files-deleted')).toBe(true);
  });

  it('Recover deletes folders of checkpoints that never completed once unwritten for twice the timeout; in-flight and recent ones stay', async () => {
    const job = await newJob();
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    await recover({ execution: 'A' });
    // A slow slot's late upload into the folder of checkpoint 7, aborted meanwhile (its folder discarded).
    const late = `${checkpointDirName(7)}/task-0-1-e3.state`;
    await storage.store.put(late, new TextEncoder().encode('late'));
    await recover({ execution: 'A' });
    expect(await storage.store.list(checkpointDirName(7))).toEqual([late]);
    // The config's timeout is 20 s: an hour later nobody writes to it any more. The checkpoint in flight stays.
    const item = await job.item<CoordinatorItem>(ControlKeys.coordinator);
    const inFlight = { checkpointId: 9, savepoint: false, final: false, triggeredAt: Date.now(), phase: 'acknowledging', waitingFor: [{ vertex: 0, subtask: 0 }], acknowledged: [] };
    await job.put(ControlKeys.coordinator, { ...item, state: { ...item?.state, inFlight, lastCheckpointId: 9 } });
    await storage.store.put(`${checkpointDirName(9)}/task-0-0-e1.state`, new TextEncoder().encode('in flight'));
    useSettings({ ...job.settings, now: () => Date.now() + 3_600_000 });
    await recover({ execution: 'A' });
    expect(await storage.store.list(checkpointDirName(7))).toEqual([]);
    expect(await storage.store.list(checkpointDirName(9))).toHaveLength(1);
    expect(job.events.find((e) => e['event'] === 'abandoned-checkpoints-deleted')).toMatchObject({ checkpointIds: [7] });
  });

  it('Trigger deletes answered request items older than an hour; recent, running and queued ones stay', async () => {
    const job = await newJob({ intervalMs: 3_600_000 });
    await recover({ execution: 'A' });
    const now = Date.now();
    const put = (id: string, status: RequestItem['status'], updatedAt: number): Promise<void> =>
      job.put(ControlKeys.request(id), { id, kind: 'savepoint', status, requestedAt: updatedAt - 1000, updatedAt } satisfies RequestItem);
    await put('old-ok', 'succeeded', now - 7_200_000);
    await put('old-failed', 'failed', now - 7_200_000);
    await put('recent', 'succeeded', now - 60_000);
    await put('stuck', 'running', now - 7_200_000);
    await trigger({ execution: 'A' });
    const ids = async (): Promise<string[]> =>
      (await Promise.all(['old-ok', 'old-failed', 'recent', 'stuck'].map(async (id) => ((await job.item<RequestItem>(ControlKeys.request(id))) === undefined ? [] : [id])))).flat();
    expect(await ids()).toEqual(['recent', 'stuck']);
    expect(job.events.find((e) => e['event'] === 'answered-requests-deleted')).toMatchObject({ requests: 2 });
  });

  it('a second execution supersedes the first', async () => {
    const job = await newJob();
    expect((await recover({ execution: 'A' })).status).toBe('running');
    expect((await trigger({ execution: 'A' })).status).toBe('running');
    expect((await recover({ execution: 'B' })).status).toBe('running');
    expect(await trigger({ execution: 'A' })).toMatchObject({ status: 'superseded', phase: 'done' });
    expect((await trigger({ execution: 'B' })).status).toBe('running');
    expect((await job.item<{ execution: string }>(ControlKeys.coordinator))?.execution).toBe('B');
  });

  it('takes savepoint and stop requests', async () => {
    const job = await newJob({ intervalMs: 60_000 });
    const workers = fakeWorkers(job);
    const sfn = await LocalStepFunctions.load({ waitMs: 100 });
    const run = sfn.run();
    const request = (id: string, kind: RequestItem['kind']): Promise<void> => job.put(ControlKeys.request(id), { id, kind, status: 'queued', requestedAt: Date.now(), updatedAt: Date.now() } satisfies RequestItem);
    await request('sp1', 'savepoint');
    await until('the savepoint', async () => (await job.item<RequestItem>(ControlKeys.request('sp1')))?.status === 'succeeded');
    const sp = await job.item<RequestItem>(ControlKeys.request('sp1'));
    expect(sp?.result?.path).toContain(`${BUCKET}/${job.jobId}/savepoints/`);
    await request('stop1', 'stop');
    await until('the stop', async () => (await job.item<RequestItem>(ControlKeys.request('stop1')))?.status === 'succeeded');
    await run; // the supervisor ends once halted
    await workers.stop();
    const control = await job.control();
    const stop = await job.item<RequestItem>(ControlKeys.request('stop1'));
    expect(control?.halted?.checkpointId).toBe(stop?.result?.checkpointId);
    expect(control?.sinkCommittedThrough).toBe(stop?.result?.checkpointId);
    await expectSinkEqualsReference(job);
    // Both savepoints have their own copies; their staging folders in checkpoint storage are gone.
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const folders = await storage.store.listFolders('');
    for (const r of [sp, stop]) expect(folders).not.toContain(checkpointDirName(r?.result?.checkpointId ?? -1));
    // Both requests were answered: the coordinator item keeps no entry for them.
    expect((await job.item<CoordinatorItem>(ControlKeys.coordinator))?.requests ?? {}).toEqual({});
  });
});
