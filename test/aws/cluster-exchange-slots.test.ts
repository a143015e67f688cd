import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runWorker } from '../../functions/worker/main.ts';
import { ExitCode } from '../../lib/cli/exit-codes.ts';
import { WORKER_DEFAULTS } from '../../lib/cli/worker-command.ts';
import { StreamEnvironment } from '../../lib/index.ts';
import type { AckItem } from '../../lib/cluster/control-items.ts';
import { checkpointDirName } from '../../lib/checkpoint/naming.ts';
import { decodeSlotCommittables } from '../../lib/cluster/slot-committables.ts';
import { KinesisExchangeTransport } from '../../lib/connectors/aws/cluster/exchange/index.ts';
import { buildPhysicalPlan, type PhysicalPlan } from '../../lib/graph/physical-plan.ts';
import { memoryServices } from '../../lib/runtime/default-services.ts';
import { SlotRunner } from '../../lib/runtime/cluster/slot-runner.ts';
import { FsObjectStore } from '../../lib/storage/fs/fs-object-store.ts';
import { InMemoryControlTable, InMemoryLeaseKeeper } from '../harness/cluster/in-memory-control.ts';
import { useKinesisEmulator } from '../harness/aws/kinesis-test-setup.ts';
import { clusterConfig, commitMetadata, coordinatorSink, feedSource, Feeds, MAX_P, P, tempDir, until, type Row } from '../unit/cluster/slot-fixtures.ts';

const kinesis = useKinesisEmulator();
const KEYS = 7;

const running: SlotRunner[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

/** feed -> keyBy(k) (murmur: NOT aligned with the feed's slots, so through the exchange) -> rolling sum -> sink. */
function exchangeJob(feeds: Feeds): { plan: PhysicalPlan; env: StreamEnvironment } {
  const env = new StreamEnvironment({ parallelism: P, maxParallelism: MAX_P });
  env
    .fromSource(feedSource(feeds))
    .keyBy((r) => r.k)
    .reduce((a, b) => ({ k: a.k, v: a.v + b.v }))
    .sinkTo(coordinatorSink());
  return { plan: buildPhysicalPlan(env.graph, env.options), env };
}

/** `n` rows of slot `slot`'s feed, each worth 1, over every key (so most cross to the other slot). */
function rows(slot: number, from: number, n: number): Row[] {
  return Array.from({ length: n }, (_, i) => ({ k: `key-${(from + i + slot) % KEYS}`, v: 1 }));
}

async function setup() {
  const feeds = new Feeds();
  const { plan, env } = exchangeJob(feeds);
  const store = new FsObjectStore(tempDir('sluice-xslots-'));
  const stream = await kinesis.newStream('exchange-slots', P);
  const table = new InMemoryControlTable();
  const base = clusterConfig(plan, store.location);
  table.config = { ...base, exchangeStream: stream, edges: base.edges.map((e) => (e.mode === 'aligned' ? { ...e, mode: 'exchange' as const } : e)) };
  expect(table.config.edges.map((e) => e.mode)).toContain('exchange');
  const transport = new KinesisExchangeTransport({ stream, parallelism: P, clientConfig: kinesis.emu.clientConfig, receiver: { idlePollMs: 20 } });
  await transport.check();
  const warnings: string[] = [];
  const runner = (slot: number): SlotRunner => {
    const r = new SlotRunner({
      plan,
      jobOptions: env.options,
      config: table.config!,
      slot,
      epoch: table.take(slot, 'w1').epoch,
      owner: 'w1',
      store,
      acks: table,
      services: memoryServices(),
      control: table.control,
      exchange: transport,
      events: { acked: () => {}, fenced: () => {}, warn: (line) => warnings.push(line) },
    });
    running.push(r);
    return r;
  };
  /** Rows committed so far: the committables of every slot's ack of every completed checkpoint, in order. */
  const committed: Row[] = [];
  let nextId = 1;
  /** The coordinator's part: trigger, wait for every slot's ack, commit the metadata, complete. */
  const checkpoint = async (slots: readonly SlotRunner[]): Promise<number> => {
    const id = nextId++;
    table.trigger(id);
    slots.forEach((s) => s.onControl(table.control));
    await until(() => slots.every((s) => table.ack(id, s.slot) !== undefined), `the acks of checkpoint ${id}`, 60_000);
    const acks = slots.map((s) => table.ack(id, s.slot)!);
    for (const ack of acks) if (ack.kind !== 'ack') throw new Error(`checkpoint ${id} declined: ${JSON.stringify(ack)}`);
    table.complete(id, await commitMetadata(store, plan, id, acks));
    slots.forEach((s) => s.onControl(table.control));
    committed.push(...(await rowsOf(store, acks)));
    return id;
  };
  /** A checkpoint id the test triggers itself (one that never completes). */
  const skipId = (): number => nextId++;
  return { feeds, plan, env, store, transport, table, runner, checkpoint, skipId, committed, warnings };
}

async function rowsOf(store: FsObjectStore, acks: readonly AckItem[]): Promise<Row[]> {
  const out: Row[] = [];
  for (const ack of acks) {
    if (ack.kind !== 'ack' || ack.committables === undefined) continue;
    const bytes = await store.get(ack.committables.path);
    for (const sink of decodeSlotCommittables(bytes!, ack.committables.path).sinks) {
      for (const c of sink.committables) out.push(...(c as { rows: Row[] }).rows);
    }
  }
  return out;
}

/** The plain loop: records per key over every feed row. */
function reference(feeds: Feeds): Map<string, number> {
  const counts = new Map<string, number>();
  for (const slotRows of feeds.rows) for (const r of slotRows) counts.set(r.k, (counts.get(r.k) ?? 0) + r.v);
  return counts;
}

/**
 * Exactly once: each input record (worth 1) made one rolling-sum output, so the committed sums of a key are exactly
 * 1, 2, ..., n in order (a lost record leaves a gap or a short list, a duplicate repeats or overshoots).
 */
function expectExactlyOnce(committed: readonly Row[], feeds: Feeds): void {
  const byKey = new Map<string, number[]>();
  for (const r of committed) byKey.set(r.k, [...(byKey.get(r.k) ?? []), r.v]);
  const want = reference(feeds);
  expect([...byKey.keys()].sort()).toEqual([...want.keys()].sort());
  for (const [key, n] of want) expect(byKey.get(key), `sums of ${key}`).toEqual(Array.from({ length: n }, (_, i) => i + 1));
}

function total(feeds: Feeds): number {
  return feeds.rows.reduce((n, r) => n + r.length, 0);
}

/** Checkpoints until every feed row's output is committed (read-committed: one checkpoint later than the rows). */
async function checkpointUntilDone(s: Awaited<ReturnType<typeof setup>>, slots: readonly SlotRunner[]): Promise<void> {
  for (let round = 0; s.committed.length < total(s.feeds); round++) {
    if (round >= 30) throw new Error(`after 30 checkpoints ${s.committed.length} of ${total(s.feeds)} outputs are committed`);
    await s.checkpoint(slots);
  }
}

describe('two slots with a murmur keyBy through the Kinesis exchange (kinesalite)', () => {
  it('the committed output equals the plain-loop reference, exactly once', async () => {
    const s = await setup();
    const slots = [s.runner(0), s.runner(1)];
    await Promise.all(slots.map((r) => r.start()));
    for (let phase = 0; phase < 3; phase++) {
      for (let slot = 0; slot < P; slot++) s.feeds.rows[slot]!.push(...rows(slot, phase * 300, 300));
      await until(() => s.feeds.read.every((n, slot) => n === s.feeds.rows[slot]!.length), `phase ${phase} read`);
      await s.checkpoint(slots);
    }
    await checkpointUntilDone(s, slots);
    expectExactlyOnce(s.committed, s.feeds);
    expect(s.committed).toHaveLength(total(s.feeds));

    // A new deployment started from one of these checkpoints (`sluice aws init --restore`) is refused: its exchange
    // state belongs to this deployment's epochs and stream.
    const fresh = new InMemoryControlTable();
    fresh.config = { ...s.table.config!, restoreFrom: join(s.store.location, checkpointDirName(1)) };
    const other = new SlotRunner({
      plan: s.plan,
      jobOptions: s.env.options,
      config: fresh.config,
      slot: 0,
      epoch: fresh.take(0, 'w2').epoch,
      owner: 'w2',
      store: s.store,
      acks: fresh,
      services: memoryServices(),
      control: fresh.control,
      exchange: s.transport,
      events: { acked: () => {}, fenced: () => {}, warn: () => {} },
    });
    running.push(other);
    await expect(other.start()).rejects.toThrow(/exchange state.*not supported yet/);
  }, 80_000);

  it('a producer slot restarted at a new epoch from the last completed checkpoint still gives exactly once', async () => {
    const s = await setup();
    const first = s.runner(0);
    const other = s.runner(1);
    await Promise.all([first.start(), other.start()]);
    // Two completed checkpoints: at the second, both slots' sums and receivers hold records released by the first.
    for (let phase = 0; phase < 2; phase++) {
      for (let slot = 0; slot < P; slot++) s.feeds.rows[slot]!.push(...rows(slot, phase * 150, 150));
      await until(() => s.feeds.read.every((n, slot) => n === s.feeds.rows[slot]!.length), `phase ${phase} read`);
      await s.checkpoint([first, other]);
    }
    // Slot 0 sends more and writes its markers of checkpoint 3 (acked), but checkpoint 3 never completes: its
    // records are in the stream and must never be delivered from this epoch.
    for (let slot = 0; slot < P; slot++) s.feeds.rows[slot]!.push(...rows(slot, 300, 200));
    await until(() => s.feeds.read.every((n, slot) => n === s.feeds.rows[slot]!.length), 'the rows of the aborted checkpoint');
    const aborted = s.skipId();
    s.table.trigger(aborted);
    first.onControl(s.table.control);
    other.onControl(s.table.control);
    await until(() => s.table.ack(aborted, 0) !== undefined && s.table.ack(aborted, 1) !== undefined, 'the acks of checkpoint 3');
    // More records after the barrier, then slot 0 dies (kill -9: nothing more is written).
    s.feeds.rows[0]!.push(...rows(0, 500, 100));
    await until(() => s.feeds.read[0] === s.feeds.rows[0]!.length, 'the rows after checkpoint 3');
    first.stopNow(new Error('killed'));
    await first.done;
    // Restarted at a new epoch from checkpoint 2: it reads its rows after checkpoint 2 again and sends them again,
    // and its receiver resumes where checkpoint 2's trigger found it.
    const restarted = s.runner(0);
    expect(await restarted.start()).toMatchObject({ restore: 's3', checkpointId: 2 });
    const slots = [restarted, other];
    for (let slot = 0; slot < P; slot++) s.feeds.rows[slot]!.push(...rows(slot, 600, 150));
    await until(() => s.feeds.read.every((n, slot) => n === s.feeds.rows[slot]!.length), 'the replayed and new rows');
    await checkpointUntilDone(s, slots);
    expectExactlyOnce(s.committed, s.feeds);
    expect(s.table.control.completed?.slotEpochs).toEqual([restarted.epoch, other.epoch]);
    expect(s.warnings.filter((w) => /exchange/i.test(w))).toEqual([]);
  }, 85_000);

  it('slot 1 handed over, then slot 0 killed: still exactly once', async () => {
    const s = await setup();
    let zero = s.runner(0);
    let one = s.runner(1);
    await Promise.all([zero.start(), one.start()]);
    const feed = async (n: number, what: string) => {
      for (let slot = 0; slot < P; slot++) s.feeds.rows[slot]!.push(...rows(slot, s.feeds.rows[slot]!.length, n));
      await until(() => s.feeds.read.every((k, slot) => k === s.feeds.rows[slot]!.length), what);
    };
    await feed(150, 'a');
    await s.checkpoint([zero, one]);
    await feed(150, 'b');
    await s.checkpoint([zero, one]);
    // Handoff of slot 1: stopped after a completed checkpoint, restarted at a new epoch.
    await one.stop();
    one = s.runner(1);
    await one.start();
    for (let i = 0; i < 4; i++) {
      await feed(50, `c${i}`);
      await s.checkpoint([zero, one]);
    }
    await feed(100, 'd');
    zero.stopNow(new Error('killed'));
    await zero.done;
    zero = s.runner(0);
    await zero.start();
    await feed(100, 'e');
    await checkpointUntilDone(s, [zero, one]);
    expectExactlyOnce(s.committed, s.feeds);
  }, 85_000);
});

describe('sluice worker --exchange-stream', () => {
  it('exits 2 naming the stream, its shard count and P when the stream has another number of shards', async () => {
    const stream = await kinesis.newStream('exchange-worker', 3);
    const table = new InMemoryControlTable();
    const dir = tempDir('sluice-xworker-');
    const { plan } = exchangeJob(new Feeds());
    const base = clusterConfig(plan, dir);
    table.config = { ...base, exchangeStream: stream, edges: base.edges.map((e) => (e.mode === 'aligned' ? { ...e, mode: 'exchange' as const } : e)) };
    const env = { ...process.env };
    // The worker's Kinesis client comes from the default chain: the emulator through the environment.
    const { endpoint, region, credentials } = kinesis.emu.clientConfig;
    Object.assign(process.env, { AWS_ENDPOINT_URL_KINESIS: endpoint, AWS_REGION: region, AWS_ACCESS_KEY_ID: credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey });
    const err: string[] = [];
    try {
      const code = await runWorker(
        {
          jobPath: fileURLToPath(new URL('../unit/cluster/fixture-job.ts', import.meta.url)),
          jobFlags: {},
          settings: {
            jobId: 'job-1',
            controlTable: 'control',
            checkpointDir: dir,
            stateDir: tempDir('sluice-xworker-state-'),
            exchangeStream: stream,
            maxSlots: undefined,
            workerId: 'w1',
            leaseDurationMs: WORKER_DEFAULTS.leaseDurationMs,
            controlPollMs: 10,
          },
        },
        {
          stdout: () => {},
          stderr: (t) => void err.push(t),
          adapters: () => Promise.resolve({ control: table, acks: table, leases: new InMemoryLeaseKeeper('w1', table) }),
          store: new FsObjectStore(dir),
          stopSignal: new Promise(() => {}),
        },
      );
      expect(code).toBe(ExitCode.usage);
    } finally {
      process.env = env;
    }
    expect(err.join('')).toContain(`exchange stream "${stream}" has 3 open shards, but the job runs ${P} slots`);
  });
});
