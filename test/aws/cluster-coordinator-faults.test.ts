import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { ControlKeys, type AckItem, type CoordinatorItem, type RequestItem } from '../../lib/cluster/control-items.ts';
import { CheckpointCoordinator } from '../../lib/checkpoint/coordinator.ts';
import type { TaskStateHandle } from '../../lib/checkpoint/types.ts';
import { checkpointDirName, metadataPath } from '../../lib/checkpoint/naming.ts';
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
  CONTROL,
  P,
  dynamo,
  expectSinkEqualsReference,
  fakeWorkers,
  newJob,
  s3,
  until,
  useCoordinatorEmulators,
} from './cluster-coordinator-harness.ts';

useCoordinatorEmulators();

describe('cluster coordinator faults on DynamoDB Local and s3rver', { timeout: 90_000 }, () => {
  it('aborts at once a checkpoint whose slot was taken over and that the new owner never acks (no wait for the timeout)', async () => {
    // A timeout far beyond the test's bound: only the generation check can end the checkpoint.
    const job = await newJob({ timeoutMs: 3_600_000 });
    let bumped: number | undefined;
    const workers = fakeWorkers(job, {
      beforeAck: async (id) => {
        if (bumped === undefined) {
          bumped = id;
          await job.bumpGeneration();
        }
      },
      // Slot 1's new owner found the trigger at its start and skips it, as a starting slot does.
      skip: (id, slot) => id === bumped && slot === 1,
    });
    const sfn = await LocalStepFunctions.load({ waitMs: 100 });
    const run = sfn.run();
    await until('the sinks of a checkpoint after the take-over', () =>
      job.events.some((e) => e['event'] === 'sinks-committed' && bumped !== undefined && (e['checkpointId'] as number) > bumped),
    );
    sfn.stop();
    await run;
    await workers.stop();
    expect(job.completed()).not.toContain(bumped);
    const aborted = job.events.find((e) => e['event'] === 'checkpoint-aborted' && e['checkpointId'] === bumped);
    expect(String(aborted?.['reason'])).toMatch(/taken over/);
    await expectSinkEqualsReference(job);
  });

  it('sets control.completed in the metadata commit transaction: a handler dying right after it leaves completed moved', async () => {
    const job = await newJob({ intervalMs: 1 });
    // Every write after the commit transaction fails: the handler dies before its outbox (notifyComplete) could run.
    let committed = false;
    const faulty = new DynamoDBClient({ ...dynamo.clientConfig, requestHandler: new NodeHttpHandler() });
    faulty.middlewareStack.add(
      (next, context) => async (args) => {
        if (committed && context.commandName !== 'GetItemCommand' && context.commandName !== 'QueryCommand') throw new Error('injected: handler dies after the commit');
        const out = await next(args);
        if (context.commandName === 'TransactWriteItemsCommand') committed = true;
        return out;
      },
      { step: 'initialize', name: 'dieAfterCommit' },
    );
    const workers = fakeWorkers(job);
    await recover({ execution: 'A' });
    await until('a trigger', async () => (await trigger({ execution: 'A' })).phase === 'collect');
    const id = (await job.control())?.trigger?.checkpointId ?? -1;
    await until('the acks of the trigger', async () => (await job.item(ControlKeys.ack(id, P - 1))) !== undefined);
    await workers.stop();
    useSettings({ ...job.settings, dynamo: faulty });
    await expect(collectAcks({ execution: 'A' })).rejects.toThrow(/injected|could not write/);
    expect(committed).toBe(true);
    // What a slot taking over now reads: the checkpoint just committed, not the previous one.
    // With the epoch of each slot's counted ack (every fake worker acks at epoch 1), which exchange receivers need.
    expect((await job.control())?.completed).toEqual({
      checkpointId: id,
      metadataPath: metadataPath({ kind: 'checkpoint', checkpointId: id }),
      slotEpochs: Array.from({ length: P }, () => 1),
    });
    expect((await job.item<CoordinatorItem>(ControlKeys.coordinator))?.pendingCommit?.checkpointId).toBe(id);
  });

  it('stores the in-flight handles without their shared-file chains and reads them back whole from the ack items', async () => {
    const job = await newJob();
    const table = new CoordinatorControlTable(dynamo.client, CONTROL, job.jobId);
    const tasks = [0, 1].map((subtask) => ({ vertex: 0, subtask }));
    let c = CheckpointCoordinator.start({ intervalMs: 1000, timeoutMs: 600_000, retain: 2 }, { tasks, maxParallelism: 128, now: 0, lastCheckpointId: 0, retainedCheckpointIds: [] });
    c = c.tick(1000).coordinator;
    const id = c.inFlight?.checkpointId ?? -1;
    const handleOf = (subtask: number): TaskStateHandle => ({
      task: { vertex: 0, subtask },
      vertexName: 'v0',
      path: `${checkpointDirName(id)}/task-0-${subtask}.state`,
      bytes: 10,
      sha256: 'a'.repeat(64),
      sharedFiles: [0, 1, 2].map((f) => ({ path: `shared/0-${subtask}-${f}.sst`, bytes: 100 + f, sha256: String(f).repeat(64) })),
    });
    // Slot 0 acked (its ack item holds its handle), slot 1 not yet.
    const ack: AckItem = { kind: 'ack', checkpointId: id, slot: 0, owner: 'w1', epoch: 1, handles: [handleOf(0)], at: Date.now() };
    await job.put(ControlKeys.ack(id, 0), ack);
    c = c.ack(id, handleOf(0), 1001).coordinator;
    const item: CoordinatorItem = { version: 0, execution: 'A', state: c.state };
    await table.writeCoordinator(item, undefined);
    const raw = await job.item<CoordinatorItem>(ControlKeys.coordinator);
    expect(raw?.sharedFilesInAcks).toBe(true);
    expect(raw?.state.inFlight?.acknowledged.map((h) => h.sharedFiles)).toEqual([undefined]);
    const read = await table.readCoordinator();
    expect(read?.state).toEqual(c.state);
    expect(read?.sharedFilesInAcks).toBeUndefined();
  });

  it('refuses the commit and leaves control.completed alone when the lease generation moved', async () => {
    const job = await newJob();
    const storage = openS3CheckpointStorage(job.dir, { s3Client: s3.client as S3Client, dynamoDbClient: dynamo.client });
    const point = storage.catalog.commitPoint as DynamoDbCommitPoint;
    const table = new CoordinatorControlTable(dynamo.client, CONTROL, job.jobId);
    const bytes = new TextEncoder().encode('metadata bytes');
    const sha = createHash('sha256').update(bytes).digest('hex');
    await job.bumpGeneration();
    expect(await point.commitConditioned(4, 'chk-4/_metadata', bytes, sha, [table.completeOnGeneration(0, 4, 'chk-4/_metadata')])).toBe('refused');
    expect((await job.control())?.completed).toBeUndefined();
    expect(await point.commitConditioned(4, 'chk-4/_metadata', bytes, sha, [table.completeOnGeneration(1, 4, 'chk-4/_metadata')])).toBe('committed');
    expect((await job.control())?.completed).toEqual({ checkpointId: 4, metadataPath: 'chk-4/_metadata' });
    // A repeat after the commit (completed already there) is still "committed" through the record's sha256.
    expect(await point.commitConditioned(4, 'chk-4/_metadata', bytes, sha, [table.completeOnGeneration(1, 4, 'chk-4/_metadata')])).toBe('committed');
  });

  it('a stop whose CommitSinks keeps failing after the halt ends only once its savepoint is committed; a repeat after the discard is a no-op', async () => {
    let failures = 0;
    const failing: ExternalCommitterFactory = (descriptor, context) => {
      const real = dynamoDbCommitterFromDescriptor(descriptor, context.dynamoDbClient);
      return {
        async commit(committables) {
          if (failures > 0) {
            failures--;
            throw new Error('injected: the sink table throttles');
          }
          await real.commit(committables as DynamoDbCommittable[]);
        },
      };
    };
    const job = await newJob({ intervalMs: 60_000, registry: new SinkCommitRegistry({ dynamodb: failing }) });
    const workers = fakeWorkers(job);
    const sfn = await LocalStepFunctions.load({ waitMs: 100 });
    const run = sfn.run();
    // More failures than CommitSinks' attempts in a cycles execution: the cycles execution ends `halted` with the
    // stop savepoint's committables still pending.
    failures = 12;
    await job.put(ControlKeys.request('stop1'), { id: 'stop1', kind: 'stop', status: 'queued', requestedAt: Date.now(), updatedAt: Date.now() } satisfies RequestItem);
    await run; // the supervisor ends once halted and committed
    await workers.stop();
    expect(failures).toBe(0);
    const stop = await job.item<RequestItem>(ControlKeys.request('stop1'));
    const stopId = stop?.result?.checkpointId ?? -1;
    expect((await job.control())?.sinkCommittedThrough).toBe(stopId);
    expect((await job.item<CoordinatorItem>(ControlKeys.coordinator))?.sinkCommits ?? []).toEqual([]);
    await expectSinkEqualsReference(job);
    // A handler died after the discard and before its save (as the old order allowed): the entry is listed again,
    // its committables folder is gone. Recover removes it without reading anything.
    const item = await job.item<CoordinatorItem>(ControlKeys.coordinator);
    await job.put(ControlKeys.coordinator, { ...item, sinkCommits: [{ checkpointId: stopId, refs: [{ path: `${checkpointDirName(stopId)}/missing`, bytes: 1, sha256: 'x' }] }] });
    expect((await recover({ execution: 'again' })).status).toBe('halted');
    expect((await job.item<CoordinatorItem>(ControlKeys.coordinator))?.sinkCommits ?? []).toEqual([]);
    await expectSinkEqualsReference(job);
  });

});
