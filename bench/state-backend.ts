// Keyed state backend benchmark (never part of the tests): a keyed window-like workload on the memory and RocksDB
// backends, with a hot key set that fits the RocksDB cache and with millions of distinct keys, checkpoint and
// restore figures, the raw figures of the RocksDB binding, and the heap cost of timers. Every case runs in its own
// child process (fresh heap, its own --max-old-space-size). Results go to docs/state.md by hand.
// Usage: npx tsx bench/state-backend.ts [--quick] [--only binding|hot|distinct|scale|restore|timers]
import { spawnSync } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keyGroupOf } from '../lib/core/index.ts';
import { HeapTimerService } from '../lib/state/timers/heap-timer-service.ts';
import {
  aggregatingState,
  isPendingKeyedSnapshot,
  valueState,
  type AggregateFunction,
  type KeyedStateBackend,
  type KeyedStateHandle,
} from '../lib/state/index.ts';
import { MemoryKeyedStateBackend } from '../lib/state/memory/memory-backend.ts';
import { RocksDbKeyedStateBackend } from '../lib/state/rocksdb/index.ts';
import { RocksDb } from '../lib/state/rocksdb/binding.ts';
import { CHECKPOINT_TIMINGS_CHANNEL, type CheckpointTiming } from '../lib/state/rocksdb/incremental-checkpoints.ts';
import { SharedStateDirectory } from '../lib/storage/fs/shared-state-directory.ts';

const MAX_PARALLELISM = 128;
const RANGE = { start: 0, end: MAX_PARALLELISM - 1 };
const BATCH = 1000;
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const mb = (bytes: number): string => (bytes / 1_000_000).toFixed(bytes >= 100_000_000 ? 0 : 1);

interface WorkloadCase {
  readonly kind: 'workload';
  readonly name: string;
  readonly backend: 'memory' | 'rocksdb';
  readonly keys: number;
  readonly events: number;
  /** Keys are visited in a scrambled order (every key once per `keys` events) rather than uniformly at random. */
  readonly distinct: boolean;
  readonly windowEvents: number;
  readonly checkpointEvery: number;
  readonly cacheMaxKeys?: number;
  readonly heapMb: number;
}

interface RestoreCase {
  readonly kind: 'restore';
  readonly name: string;
  readonly keys: number;
  readonly valueBytes: number;
  readonly heapMb: number;
}

interface TimersCase {
  readonly kind: 'timers';
  readonly name: string;
  readonly backend: 'heap' | 'rocksdb';
  readonly heapMb: number;
  readonly timers: number;
}

type Case = WorkloadCase | RestoreCase | { kind: 'binding'; name: string; heapMb: number } | TimersCase;

const sumCount: AggregateFunction<number, { s: number; c: number }, number> = {
  createAccumulator: () => ({ s: 0, c: 0 }),
  add: (v, a) => ({ s: a.s + v, c: a.c + 1 }),
  getResult: (a) => a.s / a.c,
  merge: (a, b) => ({ s: a.s + b.s, c: a.c + b.c }),
};

function newBackend(kind: 'memory' | 'rocksdb', stateDir: string, cacheMaxKeys?: number, scope?: { operatorId: string; subtask: number }): KeyedStateBackend {
  const now = Date.now;
  if (kind === 'memory') return new MemoryKeyedStateBackend({ keyGroupRange: RANGE, maxParallelism: MAX_PARALLELISM, now });
  return new RocksDbKeyedStateBackend({ keyGroupRange: RANGE, maxParallelism: MAX_PARALLELISM, now, scope, rocksdb: { stateDir, cacheMaxKeys } });
}

async function complete(b: KeyedStateBackend, id: number, store: SharedStateDirectory): Promise<{ handle: KeyedStateHandle; syncMs: number; asyncMs: number }> {
  const t0 = performance.now();
  const pending = b.snapshot(id);
  const t1 = performance.now();
  const handle = isPendingKeyedSnapshot(pending) ? await pending.complete(store) : pending;
  const t2 = performance.now();
  b.notifyCheckpointComplete?.(id);
  return { handle, syncMs: t1 - t0, asyncMs: t2 - t1 };
}

/**
 * Window-like: every event adds to its key's aggregate for the current window (namespace = window number) and to
 * a running total per key that is never cleared (so distinct keys accumulate state); when a window closes, the
 * aggregate of every key it touched is read and cleared (the firing), a batch of keys at a time.
 */
async function runWorkload(c: WorkloadCase, dir: string): Promise<Record<string, string | number>> {
  const store = new SharedStateDirectory(join(dir, 'checkpoints'));
  const b = newBackend(c.backend, join(dir, 'state'), c.cacheMaxKeys);
  if (b instanceof RocksDbKeyedStateBackend) await b.whenIdle();
  const total = b.getValueState(valueState<number>('total'));
  const window = b.getAggregatingState(aggregatingState('window', sumCount));
  const keys = new Array<string>(BATCH);
  let windowKeys: string[] = [];
  let windowNo = 0;
  let fired = 0;
  let checkpoints = 0;
  const sync: number[] = [];
  const async: number[] = [];
  let lastFiles = 0;
  // A multiplier coprime with `keys` scrambles 0..keys-1 without repeating.
  const step = 2_654_435_761 % c.keys || 1;
  let seed = 12345;
  const started = performance.now();
  for (let i = 0; i < c.events; i += BATCH) {
    for (let j = 0; j < BATCH; j++) {
      const n = i + j;
      let k: number;
      if (c.distinct) k = (n * step) % c.keys;
      else {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        k = seed % c.keys;
      }
      keys[j] = `key-${k}`;
    }
    const pending = b.prefetch?.(keys);
    if (pending !== undefined) await pending;
    for (let j = 0; j < BATCH; j++) {
      const key = keys[j] as string;
      b.setCurrentKey(key);
      total.update((total.value() ?? 0) + 1);
      window.setCurrentNamespace(windowNo);
      window.add(j);
    }
    for (let j = 0; j < BATCH; j++) windowKeys.push(keys[j] as string);
    const done = i + BATCH;
    if (done % c.windowEvents === 0) {
      const firing = [...new Set(windowKeys)];
      windowKeys = [];
      for (let f = 0; f < firing.length; f += BATCH) {
        const some = firing.slice(f, f + BATCH);
        const read = b.prefetch?.(some);
        if (read !== undefined) await read;
        window.setCurrentNamespace(windowNo);
        for (const key of some) {
          b.setCurrentKey(key);
          if (window.get() !== undefined) fired++;
          window.clear();
        }
      }
      windowNo++;
    }
    if (done % c.checkpointEvery === 0) {
      const r = await complete(b, ++checkpoints, store);
      sync.push(r.syncMs);
      async.push(r.asyncMs);
      lastFiles = 'files' in r.handle ? r.handle.files.length : 0;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  global.gc?.();
  const heap = process.memoryUsage();
  const metrics = b instanceof RocksDbKeyedStateBackend ? b.metrics() : undefined;
  const entries = b.entryCount();
  await b.dispose();
  const median = (v: number[]): number => v.slice().sort((x, y) => x - y)[Math.floor(v.length / 2)] ?? 0;
  return {
    case: c.name,
    backend: c.backend,
    keys: fmt(c.keys),
    events: fmt(c.events),
    'events/s': fmt(c.events / seconds),
    'windows fired': fmt(fired),
    entries: fmt(entries),
    checkpoints,
    'sync ms (median/max)': `${median(sync).toFixed(1)} / ${Math.max(0, ...sync).toFixed(1)}`,
    'async ms (median/max)': `${median(async).toFixed(0)} / ${Math.max(0, ...async).toFixed(0)}`,
    'files in last handle': lastFiles,
    'sync reads': metrics === undefined ? '-' : fmt(metrics.syncReads),
    'heap used MB': mb(heap.heapUsed),
    'rss MB': mb(heap.rss),
    'heap limit MB': c.heapMb,
  };
}

/** ~keys x valueBytes of state, checkpointed; then a restore that downloads the files and one that reuses the DB. */
async function runRestore(c: RestoreCase, dir: string): Promise<Record<string, string | number>> {
  const store = new SharedStateDirectory(join(dir, 'checkpoints'));
  const stateDir = join(dir, 'state');
  const scope = { operatorId: 'restore', subtask: 0 };
  const b = newBackend('rocksdb', stateDir, 50_000, scope) as RocksDbKeyedStateBackend;
  await b.whenIdle();
  const v = b.getValueState(valueState<string>('v'));
  const payload = 'x'.repeat(c.valueBytes);
  const keys = new Array<string>(BATCH);
  const t0 = performance.now();
  for (let i = 0; i < c.keys; i += BATCH) {
    for (let j = 0; j < BATCH; j++) keys[j] = `key-${i + j}`;
    await b.prefetch(keys);
    for (const key of keys) {
      b.setCurrentKey(key);
      v.update(payload);
    }
  }
  const fill = (performance.now() - t0) / 1000;
  // The incremental asynchronous phase's steps (from the backend's timings channel), its CPU time (the whole process: RocksDB's
  // threads too) and whether the background materialisation of checkpoint 1 was still running meanwhile.
  const steps: CheckpointTiming[] = [];
  let materializedAt = Number.POSITIVE_INFINITY;
  const onTiming = (message: unknown): void => {
    const timing = message as CheckpointTiming;
    if (timing.checkpointId === 2) steps.push(timing);
    if (timing.event === 'file' && timing.background) materializedAt = Math.min(materializedAt, performance.now());
  };
  subscribe(CHECKPOINT_TIMINGS_CHANNEL, onTiming);
  const { handle, asyncMs } = await complete(b, 1, store);
  if (!('files' in handle)) throw new Error('expected files');
  const fileBytes = handle.files.reduce((n, f) => n + f.bytes, 0);
  // Incremental: change 1% of the keys (spread over the key space), then checkpoint again; only the new file is
  // written by that checkpoint, the earlier ones are shared.
  const changed = 'y'.repeat(c.valueBytes);
  const step = 100;
  const tc = performance.now();
  for (let i = 0; i < c.keys; i += step * BATCH) {
    const batch: string[] = [];
    for (let j = 0; j < BATCH && i + j * step < c.keys; j++) batch.push(`key-${i + j * step}`);
    await b.prefetch(batch);
    for (const key of batch) {
      b.setCurrentKey(key);
      v.update(changed);
    }
  }
  const changeS = (performance.now() - tc) / 1000;
  const load = loadavg()[0] ?? 0;
  const cpu0 = process.cpuUsage();
  const incremental = await complete(b, 2, store);
  const cpu = process.cpuUsage(cpu0);
  const incrementalStart = performance.now() - incremental.asyncMs;
  unsubscribe(CHECKPOINT_TIMINGS_CHANNEL, onTiming);
  const completed = steps.find((t): t is Extract<CheckpointTiming, { event: 'completed' }> => t.event === 'completed');
  const file = steps.find((t): t is Extract<CheckpointTiming, { event: 'file' }> => t.event === 'file' && !t.background);
  const ms = (n: number | undefined): string => (n === undefined ? '?' : n.toFixed(0));
  if (!('files' in incremental.handle)) throw new Error('expected files');
  const known = new Set(handle.files.map((f) => f.path));
  const newBytes = incremental.handle.files.filter((f) => !known.has(f.path)).reduce((n, f) => n + f.bytes, 0);
  await b.dispose();

  // Download restore: another scope, so there is no local database to reuse.
  const t1 = performance.now();
  const downloaded = newBackend('rocksdb', stateDir, 50_000, { operatorId: 'other', subtask: 0 }) as RocksDbKeyedStateBackend;
  await downloaded.restore([handle], store);
  const downloadS = (performance.now() - t1) / 1000;
  const entries = downloaded.entryCount();
  downloaded.setCurrentKey(`key-${c.keys - 1}`);
  const ok = downloaded.getValueState(valueState<string>('v')).value() === payload;
  await downloaded.dispose();

  const t2 = performance.now();
  // Local recovery of the newest checkpoint (the one the local database holds).
  const local = newBackend('rocksdb', stateDir, 50_000, scope) as RocksDbKeyedStateBackend;
  await local.restore([incremental.handle], store);
  const localS = (performance.now() - t2) / 1000;
  const reused = local.metrics().localRecoveries === 1;
  await local.dispose();
  return {
    case: c.name,
    keys: fmt(c.keys),
    'state file MB': mb(fileBytes),
    'fill s': fill.toFixed(1),
    'checkpoint async s': (asyncMs / 1000).toFixed(1),
    'change 1% s': changeS.toFixed(2),
    'incremental checkpoint MB': mb(newBytes),
    'incremental / full': `${((100 * newBytes) / fileBytes).toFixed(2)}%`,
    'incremental async s': (incremental.asyncMs / 1000).toFixed(2),
    'incremental async CPU s': ((cpu.user + cpu.system) / 1e6).toFixed(2),
    'incremental ms: seal flush / write file / put / rest': [
      ms(completed?.flushWaitMs),
      ms(file?.writeMs),
      ms(file?.putMs),
      ms(incremental.asyncMs - (completed?.flushWaitMs ?? 0) - (file === undefined ? 0 : file.writeMs + file.putMs)),
    ].join(' / '),
    'materialisation meanwhile': String(Number.isFinite(materializedAt) && materializedAt > incrementalStart),
    'load avg (1 min)': load.toFixed(1),
    'restore from files s': downloadS.toFixed(1),
    'restore MB/s': fmt(fileBytes / 1_000_000 / downloadS),
    'local recovery s': localS.toFixed(2),
    'reused local DB': String(reused),
    'restored entries': fmt(entries),
    'values ok': String(ok),
  };
}

/** The binding on its own: 1M keys of 16 bytes with 64-byte values. */
async function runBinding(dir: string): Promise<Record<string, string | number>> {
  const db = await RocksDb.open(join(dir, 'binding'), { blockCacheBytes: 32 << 20, writeBufferBytes: 64 << 20, compression: true });
  const n = 1_000_000;
  const key = (i: number): Buffer => {
    const k = Buffer.alloc(16);
    k.writeUInt32BE(keyGroupOf(i, MAX_PARALLELISM), 0);
    k.writeUInt32BE(i, 12);
    return k;
  };
  const value = Buffer.alloc(64, 7);
  let t = performance.now();
  for (let i = 0; i < n; i += BATCH) {
    const batch = db.batch();
    for (let j = i; j < i + BATCH; j++) batch.put(key(j), value);
    batch.write();
  }
  const puts = n / ((performance.now() - t) / 1000);
  const sample = Array.from({ length: n }, (_, i) => key((i * 7919) % n));
  t = performance.now();
  for (let i = 0; i < n; i += BATCH) db.getSync(sample.slice(i, i + BATCH));
  const getSync = n / ((performance.now() - t) / 1000);
  t = performance.now();
  for (let i = 0; i < n; i += BATCH) await db.get(sample.slice(i, i + BATCH));
  const getAsync = n / ((performance.now() - t) / 1000);
  t = performance.now();
  for (let i = 0; i < 50_000; i++) await db.get([sample[i] as Buffer]);
  const awaited = 50_000 / ((performance.now() - t) / 1000);
  t = performance.now();
  const cursor = db.cursor(Buffer.from([0]), Buffer.from([0xff]));
  let rows = 0;
  for (let r = cursor.next(1000); r.length > 0; r = cursor.next(1000)) rows += r.length / 2;
  const scan = rows / ((performance.now() - t) / 1000);
  await db.close();
  return {
    case: 'binding (@nxtedition/rocksdb 12.2.12)',
    'puts/s (1000-batches)': fmt(puts),
    'getManySync(1000) keys/s': fmt(getSync),
    'getMany(1000) async keys/s': fmt(getAsync),
    'awaited get/s': fmt(awaited),
    'scan rows/s': fmt(scan),
  };
}

/**
 * Pending timers, one per key (a window end): heap bytes per timer, registration and firing rates. The heap service
 * holds every timer; the RocksDB one holds only its cache of rows (the default 100,000 keys) whatever the count.
 * Registration goes through the operator's path (a prefetched batch of keys, the key current, then the timer);
 * firing pops rounds until an empty one and makes each timer's key current, as operators do.
 */
async function runTimers(c: TimersCase, dir: string): Promise<Record<string, string | number>> {
  const count = c.timers;
  global.gc?.();
  const before = process.memoryUsage().heapUsed;
  const backend = c.backend === 'rocksdb' ? (newBackend('rocksdb', join(dir, 'state')) as RocksDbKeyedStateBackend) : undefined;
  await backend?.open();
  const timers = backend === undefined ? new HeapTimerService({ maxParallelism: MAX_PARALLELISM }) : backend.timerService();
  const keys = new Array<string>(BATCH);
  const t0 = performance.now();
  for (let i = 0; i < count; i += BATCH) {
    for (let j = 0; j < BATCH; j++) keys[j] = `key-${i + j}`;
    await backend?.prefetch(keys);
    for (let j = 0; j < BATCH; j++) {
      const key = keys[j] as string;
      backend?.setCurrentKey(key);
      const window = 60_000 * ((i + j) % 10);
      timers.registerEventTimeTimer(key, window, window + 59_999);
    }
  }
  const registerS = (performance.now() - t0) / 1000;
  global.gc?.();
  const heap = process.memoryUsage().heapUsed - before;
  const pending = timers.eventTimerCount();
  const t1 = performance.now();
  let fired = 0;
  for (let round = timers.popEventTimeTimers(Infinity); round.length > 0; round = timers.popEventTimeTimers(Infinity)) {
    if (backend !== undefined) {
      await backend.prefetch(round.map((t) => t.key));
      for (const t of round) backend.setCurrentKey(t.key);
    }
    fired += round.length;
  }
  const fireS = (performance.now() - t1) / 1000;
  await backend?.dispose();
  return {
    case: `${c.backend === 'rocksdb' ? 'RocksDB' : 'heap'} timers`,
    timers: fmt(pending),
    'heap MB while pending': mb(heap),
    'heap bytes per timer': fmt(heap / count),
    'register timers/s': fmt(count / registerS),
    'fire timers/s': fmt(fired / fireS),
    fired: fmt(fired),
  };
}

async function runChild(c: Case): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-state-'));
  try {
    let result: Record<string, string | number>;
    if (c.kind === 'workload') result = await runWorkload(c, dir);
    else if (c.kind === 'restore') result = await runRestore(c, dir);
    else if (c.kind === 'binding') result = await runBinding(dir);
    else result = await runTimers(c, dir);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    // A failed cleanup does not fail the case (its result is printed already): a disposed backend may still be
    // deleting, or RocksDB still closing, a database directory in the background.
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
    } catch (err) {
      console.error(`could not remove ${dir}: ${String(err)}`);
    }
  }
}

function cases(quick: boolean, only: string | undefined): Case[] {
  const scale = quick ? 0.1 : 1;
  const n = (x: number): number => Math.max(BATCH, Math.round((x * scale) / BATCH) * BATCH);
  const all: (Case & { group: string })[] = [
    { group: 'binding', kind: 'binding', name: 'binding', heapMb: 1024 },
    ...(['memory', 'rocksdb'] as const).map((backend) => ({
      group: 'hot',
      kind: 'workload' as const,
      name: 'hot keys (fit the cache)',
      backend,
      keys: 10_000,
      events: n(5_000_000),
      distinct: false,
      windowEvents: n(250_000),
      checkpointEvery: n(1_000_000),
      heapMb: 512,
    })),
    {
      group: 'distinct',
      kind: 'workload',
      name: 'distinct keys',
      backend: 'memory',
      keys: n(2_000_000),
      events: n(4_000_000),
      distinct: true,
      windowEvents: n(500_000),
      checkpointEvery: n(2_000_000),
      heapMb: 4096,
    },
    {
      group: 'distinct',
      kind: 'workload',
      name: 'distinct keys',
      backend: 'rocksdb',
      keys: n(10_000_000),
      events: n(20_000_000),
      distinct: true,
      windowEvents: n(500_000),
      checkpointEvery: n(5_000_000),
      heapMb: 512,
    },
    {
      group: 'distinct',
      kind: 'workload',
      name: 'distinct keys, windows within the cache',
      backend: 'rocksdb',
      keys: n(10_000_000),
      events: n(20_000_000),
      distinct: true,
      windowEvents: n(50_000),
      checkpointEvery: n(5_000_000),
      heapMb: 512,
    },
    {
      group: 'scale',
      kind: 'workload',
      name: '20M keys in a 512 MB heap',
      backend: 'rocksdb',
      keys: n(20_000_000),
      events: n(20_000_000),
      distinct: true,
      windowEvents: n(1_000_000),
      checkpointEvery: n(10_000_000),
      heapMb: 512,
    },
    { group: 'restore', kind: 'restore', name: '~1 GB of state', keys: n(4_000_000), valueBytes: 240, heapMb: 512 },
    { group: 'timers', kind: 'timers', name: 'heap timers', backend: 'heap', heapMb: 4096, timers: n(2_000_000) },
    { group: 'timers', kind: 'timers', name: 'RocksDB timers', backend: 'rocksdb', heapMb: 256, timers: n(2_000_000) },
  ];
  return all.filter((c) => only === undefined || c.group === only);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--case') {
    await runChild(JSON.parse(args[1] as string) as Case);
    return;
  }
  const quick = args.includes('--quick');
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
  const self = fileURLToPath(import.meta.url);
  console.log(`# state backend benchmark (${cpus().length} cores, node ${process.version}${quick ? ', quick' : ''})\n`);
  const results = new Map<string, Record<string, string | number>[]>();
  for (const c of cases(quick, only)) {
    const child = spawnSync(process.execPath, [`--max-old-space-size=${c.heapMb}`, '--expose-gc', '--import', 'tsx', self, '--case', JSON.stringify(c)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 16 << 20,
    });
    const line = child.stdout.trim().split('\n').at(-1) ?? '';
    const result = child.status === 0 && line.startsWith('{') ? (JSON.parse(line) as Record<string, string | number>) : { case: c.name, error: `exit ${String(child.status ?? child.signal)}` };
    const list = results.get(c.kind) ?? [];
    list.push(result);
    results.set(c.kind, list);
    console.error(JSON.stringify(result));
  }
  for (const rows of results.values()) {
    const head = [...new Set(rows.flatMap((r) => Object.keys(r)))];
    console.log(`| ${head.join(' | ')} |\n|${head.map(() => '---').join('|')}|`);
    for (const r of rows) console.log(`| ${head.map((h) => String(r[h] ?? '')).join(' | ')} |`);
    console.log('');
  }
}

await main();
