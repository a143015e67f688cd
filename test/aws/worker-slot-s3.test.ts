import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeSlotCommittables } from '../../lib/cluster/slot-committables.ts';
import { SlotRunner } from '../../lib/runtime/cluster/slot-runner.ts';
import { prepareSlotDirs } from '../../lib/runtime/cluster/slot-state-dirs.ts';
import { rocksDbServices } from '../../lib/state/rocksdb/index.ts';
import type { ObjectStore } from '../../lib/storage/object-store.ts';
import { openWorkerObjectStore } from '../../functions/worker/object-store.ts';
import { startS3Emulator, type S3Emulator } from '../harness/aws/s3-emulator.ts';
import { InMemoryControlTable } from '../harness/cluster/in-memory-control.ts';
import { buildJob, clusterConfig, Feeds, keysOfSlot, tempDir, until, type Row } from '../unit/cluster/slot-fixtures.ts';
import { CHECKPOINT_FORMAT_VERSION } from '../../lib/checkpoint/types.ts';
import { checkpointDirName } from '../../lib/checkpoint/naming.ts';
import { operatorStateRecords } from '../../lib/graph/operator-records.ts';
import { encodeMetadata } from '../../lib/storage/metadata-codec.ts';
import type { AckItem } from '../../lib/cluster/control-items.ts';
import type { PhysicalPlan } from '../../lib/graph/physical-plan.ts';

const BUCKET = 'checkpoints';
let s3: S3Emulator;
const saved = { ...process.env };

beforeAll(async () => {
  s3 = await startS3Emulator({ buckets: [BUCKET] });
  Object.assign(process.env, { AWS_ENDPOINT_URL: s3.endpoint, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' });
});

afterAll(async () => {
  for (const k of ['AWS_ENDPOINT_URL', 'AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  await s3?.stop();
});

async function commitMetadata(store: ObjectStore, plan: PhysicalPlan, checkpointId: number, acks: readonly AckItem[]): Promise<string> {
  const path = `${checkpointDirName(checkpointId)}/_metadata`;
  await store.put(
    path,
    encodeMetadata({
      version: CHECKPOINT_FORMAT_VERSION,
      checkpointId,
      savepoint: false,
      triggeredAt: 0,
      completedAt: 0,
      maxParallelism: plan.maxParallelism,
      parallelism: Object.fromEntries(plan.vertices.map((v) => [v.id, v.parallelism])),
      tasks: acks.flatMap((a) => (a.kind === 'ack' ? a.handles : [])),
      operators: operatorStateRecords(plan),
    }),
  );
  return path;
}

describe('a worker slot on S3 checkpoint storage (s3rver)', () => {
  it('acks with its task files and committables in S3, and another worker restores the slot from them exactly', async () => {
    const feeds = new Feeds();
    const { plan, env } = buildJob(feeds);
    const store = openWorkerObjectStore(`s3://${BUCKET}/jobs/job-1`);
    const table = new InMemoryControlTable();
    table.config = clusterConfig(plan, store.location);
    const start = async (owner: string) => {
      const { epoch } = table.take(0, owner);
      const dirs = await prepareSlotDirs({ stateRoot: tempDir('sluice-s3-state-'), tempRoot: tempDir('sluice-s3-temp-'), jobId: 'job-1', slot: 0, epoch });
      const runner = new SlotRunner({
        plan,
        jobOptions: env.options,
        config: table.config!,
        slot: 0,
        epoch,
        owner,
        store,
        acks: table,
        services: rocksDbServices({ stateDir: dirs.stateDir, tempDir: dirs.tempDir }),
        control: table.control,
        events: { acked() {}, fenced() {}, warn() {} },
      });
      return { runner, started: await runner.start() };
    };
    const [a, b] = keysOfSlot(0, 2);
    const first = await start('w1');
    feeds.rows[0]!.push({ k: a!, v: 1 }, { k: b!, v: 2 }, { k: a!, v: 4 });
    await until(() => feeds.read[0] === 3, 'the rows');
    table.trigger(1);
    first.runner.onControl(table.control);
    await until(() => table.ack(1, 0) !== undefined, 'the ack of checkpoint 1', 60_000);
    const ack = table.ack(1, 0)!;
    if (ack.kind !== 'ack') throw new Error('expected an ack');
    expect(ack.committables?.path).toBe('chk-0000000001/committables-0-e1.json');
    const committed = decodeSlotCommittables((await store.get(ack.committables!.path))!, 'committables');
    expect(committed.sinks.flatMap((s) => s.committables.flatMap((c) => (c as { rows: Row[] }).rows))).toEqual([
      { k: a, v: 1 },
      { k: b, v: 2 },
      { k: a, v: 5 },
    ]);
    table.complete(1, await commitMetadata(store, plan, 1, [ack]));
    first.runner.stopNow(new Error('kill -9'));
    await first.runner.done;

    feeds.rows[0]!.push({ k: b!, v: 10 });
    const second = await start('w2');
    expect(second.started).toMatchObject({ restore: 's3', checkpointId: 1 });
    await until(() => feeds.read[0] === 4, 'the new row');
    table.trigger(2);
    second.runner.onControl(table.control);
    await until(() => table.ack(2, 0) !== undefined, 'the ack of checkpoint 2', 60_000);
    const ack2 = table.ack(2, 0)!;
    if (ack2.kind !== 'ack') throw new Error('expected an ack');
    expect(ack2.epoch).toBe(2);
    const object = decodeSlotCommittables((await store.get(ack2.committables!.path))!, 'committables');
    expect(object.sinks.flatMap((s) => s.committables.flatMap((c) => (c as { rows: Row[] }).rows))).toEqual([{ k: b, v: 12 }]);
    await second.runner.stop();
  }, 80_000);
});
