// Checkpoint benchmarks (never part of the tests): the cost of a 1 s checkpoint interval on the keyed window job and
// its synchronous/asynchronous phases, checkpoint duration and size for 10 MB, 100 MB and 1 GB of keyed state, the
// time from a restart to the first record, and what immutable accumulators cost. About 20 minutes; run it on an
// otherwise idle machine (on 2 cores, anything else running moves these figures by more than they differ).
// Usage: npm run bench:checkpoints [-- --quick] [-- --skip-1gb] [-- --only throughput|sizes|restart|accumulators]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runOnThreads } from 'sluice';
import type { CheckpointMetadata, TaskStateHandle } from '../lib/checkpoint/types.ts';
import { FileCheckpointStorage } from '../lib/storage/fs/file-checkpoint-storage.ts';
import type { RunSpec } from './checkpoint-run.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const skip1gb = args.includes('--skip-1gb');
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const RUNNER = here('./checkpoint-run.ts');
const KEYED_WINDOW = here('./jobs/keyed-window.ts');
const KEYED_STATE = here('./jobs/keyed-state.ts');
const MB = 1_000_000;

// ---------------------------------------------------------------------------------------------------------------
// Helpers

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number | undefined) => (n === undefined ? '-' : n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : fmt(n));
const megabytes = (bytes: number) => (bytes >= 100 * MB ? fmt(bytes / MB) : (bytes / MB).toFixed(bytes >= 10 * MB ? 1 : 2));

/** Nearest-rank percentile (p in 0..100) of unsorted values. */
function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
const median = (values: readonly number[]) => percentile(values, 50) as number;

function table(head: string[], rows: string[][]): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** Complete checkpoints in `dir`, oldest first. */
async function checkpointsIn(dir: string): Promise<CheckpointMetadata[]> {
  const listed = await new FileCheckpointStorage(dir).list();
  return listed.flatMap((c) => (c.status === 'complete' ? [c.metadata] : [])).reverse();
}

const durationOf = (m: CheckpointMetadata) => m.completedAt - m.triggeredAt;
const bytesOf = (m: CheckpointMetadata) => m.tasks.reduce((sum, t) => sum + t.bytes, 0);

interface Child {
  readonly pid: number | undefined;
  /** Lines of stderr as they arrive, with the epoch ms the child stamped on them. */
  readonly lines: AsyncIterable<{ at: number; text: string }>;
  readonly exited: Promise<number | null>;
  kill(): void;
}

/** Starts `checkpoint-run.ts` with `spec` in a new Node process. */
function startChild(spec: RunSpec): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', RUNNER, JSON.stringify(spec)], {
    cwd: here('..'),
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  async function* lines(): AsyncGenerator<{ at: number; text: string }> {
    let carry = '';
    for await (const chunk of child.stderr) {
      const parts = (carry + String(chunk)).split('\n');
      carry = parts.pop() ?? '';
      for (const line of parts) {
        const m = /^(\d{13}) (.*)$/.exec(line);
        if (m !== null) yield { at: Number(m[1]), text: m[2]! };
        else {
          // FIRST_RECORD comes from the job itself; anything else is passed through (warnings, errors).
          const first = /^FIRST_RECORD (\d+)$/.exec(line);
          if (first !== null) yield { at: Number(first[1]), text: 'FIRST_RECORD' };
          else if (line.trim() !== '') process.stderr.write(`  [child] ${line}\n`);
        }
      }
    }
  }
  return { pid: child.pid, lines: lines(), exited, kill: () => child.kill('SIGKILL') };
}

/** Runs a child to its end; returns its DONE report. */
async function runChild(spec: RunSpec): Promise<Record<string, unknown>> {
  const child = startChild(spec);
  let done: Record<string, unknown> | undefined;
  for await (const line of child.lines) {
    if (line.text.startsWith('DONE ')) done = JSON.parse(line.text.slice(5)) as Record<string, unknown>;
  }
  const code = await child.exited;
  if (code !== 0 || done === undefined) throw new Error(`benchmark child failed (exit code ${code}): ${JSON.stringify(spec)}`);
  return done;
}

const tempDir = () => mkdtempSync(join(tmpdir(), 'sluice-bench-chk-'));

// ---------------------------------------------------------------------------------------------------------------
// 1. Throughput with a 1 s checkpoint interval versus none, and the phases of those checkpoints

interface ThroughputRow {
  name: string;
  parallelism: number;
  none: number[];
  interval: number[];
  checkpoints: CheckpointMetadata[];
}

async function throughput(): Promise<ThroughputRow[]> {
  const reps = quick ? 1 : 5;
  const rows: ThroughputRow[] = [];
  for (const keys of [1_000, 10_000]) {
    // About 15 s per run, so that the fixed cost of the final checkpoint at the end of input hardly counts.
    const events = quick ? 2_000_000 : keys === 1_000 ? 30_000_000 : 15_000_000;
    for (const parallelism of [1, 2]) {
      const row: ThroughputRow = { name: `keyed 10 s tumbling count/sum, ${fmt(keys)} keys`, parallelism, none: [], interval: [], checkpoints: [] };
      for (let rep = 0; rep < reps; rep++) {
        // Alternate, so that drift of the machine affects both sides alike.
        for (const withCheckpoints of rep % 2 === 0 ? [false, true] : [true, false]) {
          const dir = tempDir();
          try {
            const started = process.hrtime.bigint();
            await runOnThreads({
              modulePath: KEYED_WINDOW,
              flags: { events, keys },
              jobOptions: { parallelism },
              checkpointing: withCheckpoints ? { dir, intervalMs: 1000, retain: 100_000 } : undefined,
              log: () => {},
            });
            const rate = events / (Number(process.hrtime.bigint() - started) / 1e9);
            (withCheckpoints ? row.interval : row.none).push(rate);
            if (withCheckpoints) row.checkpoints.push(...(await checkpointsIn(dir)));
            console.log(`${row.name} p=${parallelism} ${withCheckpoints ? '1 s interval' : 'no checkpoints'}: ${fmt(rate)} events/s`);
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        }
      }
      rows.push(row);
    }
  }
  return rows;
}

function throughputTables(rows: ThroughputRow[]): string {
  const rates = table(
    ['job', 'parallelism', 'runs', 'no checkpoints (events/s, median; range)', '1 s interval (events/s, median; range)', 'change of medians', 'checkpoints per run'],
    rows.map((r) => {
      const none = median(r.none);
      const interval = median(r.interval);
      const change = (interval / none - 1) * 100;
      const perRun = r.checkpoints.length / Math.max(1, r.interval.length);
      const range = (v: number[]) => `${fmt(Math.min(...v))}-${fmt(Math.max(...v))}`;
      return [
        r.name,
        String(r.parallelism),
        String(r.none.length),
        `${fmt(none)}; ${range(r.none)}`,
        `${fmt(interval)}; ${range(r.interval)}`,
        `${change >= 0 ? '+' : ''}${change.toFixed(1)}%`,
        perRun.toFixed(1),
      ];
    }),
  );
  const phases = table(
    ['job', 'parallelism', 'window task snapshots', 'sync p50 (ms)', 'sync p99 (ms)', 'sync max (ms)', 'async p50 (ms)', 'async p99 (ms)', 'checkpoint p50 (ms)', 'checkpoint p99 (ms)', 'size p50 (MB)'],
    rows.map((r) => {
      // The window tasks hold the state; the source tasks' snapshots (split positions) take microseconds.
      const handles = r.checkpoints.flatMap((c) => c.tasks).filter((h) => h.vertexName.includes('Window'));
      const sync = handles.flatMap((h: TaskStateHandle) => (h.syncMs === undefined ? [] : [h.syncMs]));
      const async = handles.flatMap((h: TaskStateHandle) => (h.asyncMs === undefined ? [] : [h.asyncMs]));
      const durations = r.checkpoints.map(durationOf);
      return [
        r.name,
        String(r.parallelism),
        String(sync.length),
        ms(percentile(sync, 50)),
        ms(percentile(sync, 99)),
        ms(percentile(sync, 100)),
        ms(percentile(async, 50)),
        ms(percentile(async, 99)),
        ms(percentile(durations, 50)),
        ms(percentile(durations, 99)),
        megabytes(percentile(r.checkpoints.map(bytesOf), 50) ?? 0),
      ];
    }),
  );
  return `${rates}\n\n${phases}`;
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Checkpoint duration and size by state size

const VALUE_BYTES = 1_000;
/** Records per second of the keyed state job: fills the state, then replaces values at this rate. */
const STATE_JOB_RATE = 100_000;

/** A keyed state job of `stateBytes` (keys x VALUE_BYTES), unbounded and throttled, checkpointing every `intervalMs`. */
function stateJob(stateBytes: number, dir: string, intervalMs: number, announceFirst: boolean): RunSpec {
  const keys = Math.round(stateBytes / VALUE_BYTES);
  return {
    kind: 'job',
    modulePath: KEYED_STATE,
    flags: { keys, valueBytes: VALUE_BYTES, events: 0, rate: STATE_JOB_RATE, announceFirst },
    parallelism: 1,
    dir,
    intervalMs,
    retain: 1000,
  };
}

/** Peak resident set of a running process in MB (Linux), read before it is killed. */
function peakRssMb(pid: number | undefined): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
    return kb === undefined ? undefined : Math.round(Number(kb) / 1024);
  } catch {
    return undefined;
  }
}

/**
 * Runs `spec` in a child until `count` complete checkpoints hold at least `bytes` each, then kills it (SIGKILL, like
 * a crash). Returns those checkpoints and the child's peak RSS.
 */
async function runUntilCheckpoints(spec: RunSpec, bytes: number, count: number, timeoutMs: number): Promise<{ full: CheckpointMetadata[]; peakRssMb: number | undefined }> {
  if (spec.kind !== 'job') throw new Error('not a job');
  const child = startChild(spec);
  const drained = (async () => {
    for await (const _ of child.lines);
  })();
  let exitCode: number | null | undefined;
  void child.exited.then((code) => (exitCode = code));
  const deadline = Date.now() + timeoutMs;
  let full: CheckpointMetadata[] = [];
  try {
    while (full.length < count) {
      if (exitCode !== undefined) throw new Error(`the job exited early (code ${exitCode})`);
      if (Date.now() > deadline) throw new Error(`fewer than ${count} checkpoints of the full state within ${timeoutMs / 1000} s`);
      await new Promise((r) => setTimeout(r, 200));
      // The child may be deleting old checkpoints while they are listed: try again on the next round.
      full = (await checkpointsIn(spec.dir).catch(() => [])).filter((m) => bytesOf(m) >= bytes);
    }
    return { full, peakRssMb: peakRssMb(child.pid) };
  } finally {
    child.kill();
    await child.exited;
    await drained;
  }
}

interface SizeRow {
  readonly label: string;
  readonly keys: number;
  readonly checkpoints: CheckpointMetadata[];
  /** Encoding the last checkpoint's state again, with its size as hint (as the hub does after the first). */
  readonly encodeMs: number | undefined;
  /** The same without a hint (a task's first checkpoint). */
  readonly encodeUnhintedMs: number | undefined;
  readonly peakRssMb: number | undefined;
  readonly error?: string;
}

/** The handle of the task holding the keyed state (the largest). */
const keyedTask = (m: CheckpointMetadata): TaskStateHandle => m.tasks.reduce((a, b) => (b.bytes > a.bytes ? b : a));

async function sizes(): Promise<SizeRow[]> {
  const targets = [
    { label: '10 MB', bytes: 10 * MB, count: quick ? 2 : 6 },
    { label: '100 MB', bytes: 100 * MB, count: quick ? 2 : 6 },
    ...(skip1gb ? [] : [{ label: '1 GB', bytes: 1000 * MB, count: quick ? 2 : 4 }]),
  ];
  const rows: SizeRow[] = [];
  for (const target of targets) {
    const keys = Math.round(target.bytes / VALUE_BYTES);
    const dir = tempDir();
    try {
      // Full means every key holds a value: the checkpoint is at least keys x VALUE_BYTES.
      const run = await runUntilCheckpoints(stateJob(target.bytes, dir, 1000, false), target.bytes, target.count, 300_000);
      const last = run.full.at(-1)!;
      const encoded = await runChild({ kind: 'encode', path: join(dir, ...keyedTask(last).path.split('/')), repeat: 3 });
      const row: SizeRow = {
        label: target.label,
        keys,
        checkpoints: run.full,
        encodeMs: Math.min(...(encoded['hintedMs'] as number[])),
        encodeUnhintedMs: encoded['unhintedMs'] as number,
        peakRssMb: run.peakRssMb,
      };
      rows.push(row);
      for (const m of run.full) {
        const t = keyedTask(m);
        console.log(`${target.label}: checkpoint ${m.checkpointId} ${ms(durationOf(m))} ms, ${megabytes(bytesOf(m))} MB, sync ${ms(t.syncMs)} ms, async ${ms(t.asyncMs)} ms`);
      }
      console.log(`${target.label}: encoding alone ${ms(row.encodeMs)} ms (${ms(row.encodeUnhintedMs)} ms without a size hint); job peak RSS ${row.peakRssMb ?? '-'} MB`);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      console.log(`${target.label}: failed: ${error}`);
      rows.push({ label: target.label, keys, checkpoints: [], encodeMs: undefined, encodeUnhintedMs: undefined, peakRssMb: undefined, error });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return rows;
}

function sizesTable(rows: SizeRow[]): string {
  return table(
    ['keyed state', 'keys x value', 'checkpoints', 'size (MB)', 'duration p50 / max (ms)', 'sync phase p50 / max (ms)', 'async phase p50 / max (ms)', 'encoding alone (ms)', 'same, no size hint (ms)', 'MB/s (size / duration)', 'job peak RSS (MB)'],
    rows.map((r) => {
      const shape = `${fmt(r.keys)} x ${fmt(VALUE_BYTES)} B`;
      if (r.checkpoints.length === 0) return [r.label, shape, '0', `failed: ${r.error ?? ''}`, '', '', '', '', '', '', ''];
      const both = (values: number[]) => `${ms(percentile(values, 50))} / ${ms(percentile(values, 100))}`;
      const tasks = r.checkpoints.map(keyedTask);
      return [
        r.label,
        shape,
        String(r.checkpoints.length),
        megabytes(median(r.checkpoints.map(bytesOf))),
        both(r.checkpoints.map(durationOf)),
        both(tasks.map((t) => t.syncMs ?? Number.NaN)),
        both(tasks.map((t) => t.asyncMs ?? Number.NaN)),
        ms(r.encodeMs),
        ms(r.encodeUnhintedMs),
        fmt(median(r.checkpoints.map((m) => bytesOf(m) / MB / (durationOf(m) / 1000)))),
        r.peakRssMb === undefined ? '-' : fmt(r.peakRssMb),
      ];
    }),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Restart from a checkpoint of 100 MB of keyed state

interface RestartSample {
  readonly startToDecision: number;
  readonly decisionToFirst: number;
  readonly startToFirst: number;
}

async function restart(): Promise<{ samples: RestartSample[]; checkpointBytes: number }> {
  const stateBytes = 100 * MB;
  const dir = tempDir();
  const spec = stateJob(stateBytes, dir, 2000, true);
  try {
    // First run: crashed (SIGKILL) once a complete checkpoint holds all of the state.
    const { full } = await runUntilCheckpoints(spec, stateBytes, 1, 120_000);
    const samples: RestartSample[] = [];
    for (let rep = 0; rep < (quick ? 1 : 5); rep++) {
      const started = Date.now();
      const child = startChild(spec);
      let decision: number | undefined;
      let firstRecord: number | undefined;
      for await (const line of child.lines) {
        if (line.text.startsWith('LOG restored from checkpoint')) decision = line.at;
        if (line.text === 'FIRST_RECORD' && decision !== undefined) {
          firstRecord = line.at;
          break;
        }
      }
      child.kill();
      await child.exited;
      if (decision === undefined || firstRecord === undefined) throw new Error('the restarted job did not report a restore and a first record');
      const sample = { startToDecision: decision - started, decisionToFirst: firstRecord - decision, startToFirst: firstRecord - started };
      samples.push(sample);
      console.log(`restart: process start -> restore decision ${sample.startToDecision} ms, -> first record ${sample.decisionToFirst} ms more (${sample.startToFirst} ms in all)`);
    }
    return { samples, checkpointBytes: bytesOf(full.at(-1)!) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function restartTable(result: { samples: RestartSample[]; checkpointBytes: number }): string {
  const { samples } = result;
  const row = (f: (s: RestartSample) => number) => `${fmt(median(samples.map(f)))} (${samples.map((s) => fmt(f(s))).join(', ')})`;
  return table(
    ['checkpoint', 'restarts', 'process start -> restore decision (ms)', 'restore decision -> first record (ms)', 'process start -> first record (ms)'],
    [[`${megabytes(result.checkpointBytes)} MB of keyed state`, String(samples.length), row((s) => s.startToDecision), row((s) => s.decisionToFirst), row((s) => s.startToFirst)]],
  );
}

// ---------------------------------------------------------------------------------------------------------------
// 4. What immutable accumulators cost (no checkpoints): a new { count, total } per record versus one mutated in place

async function accumulators(): Promise<string> {
  const reps = quick ? 1 : 5;
  const rows: string[][] = [];
  for (const keys of [1_000, 10_000]) {
    const events = quick ? 2_000_000 : keys === 1_000 ? 30_000_000 : 15_000_000;
    const rates: Record<'inPlace' | 'fresh', number[]> = { inPlace: [], fresh: [] };
    for (let rep = 0; rep < reps; rep++) {
      for (const inPlace of rep % 2 === 0 ? [true, false] : [false, true]) {
        const started = process.hrtime.bigint();
        await runOnThreads({ modulePath: KEYED_WINDOW, flags: { events, keys, inPlace }, jobOptions: { parallelism: 1 }, log: () => {} });
        const rate = events / (Number(process.hrtime.bigint() - started) / 1e9);
        rates[inPlace ? 'inPlace' : 'fresh'].push(rate);
        console.log(`keyed window ${fmt(keys)} keys, accumulator ${inPlace ? 'mutated in place' : 'new per record'}: ${fmt(rate)} events/s`);
      }
    }
    const change = (median(rates.fresh) / median(rates.inPlace) - 1) * 100;
    rows.push([`keyed 10 s tumbling count/sum, ${fmt(keys)} keys`, '1', String(reps), fmt(median(rates.inPlace)), fmt(median(rates.fresh)), `${change >= 0 ? '+' : ''}${change.toFixed(1)}%`]);
  }
  return table(['job', 'parallelism', 'runs', 'accumulator mutated in place (events/s)', 'new accumulator per record (events/s)', 'change of medians'], rows);
}

// ---------------------------------------------------------------------------------------------------------------

const out: string[] = [];
if (only === undefined || only === 'throughput') out.push('### Throughput and checkpoint phases (keyed window job)', throughputTables(await throughput()));
if (only === undefined || only === 'sizes') out.push('### Checkpoint duration and size by keyed state size', sizesTable(await sizes()));
if (only === undefined || only === 'restart') out.push('### Restart from a checkpoint', restartTable(await restart()));
if (only === undefined || only === 'accumulators') out.push('### Immutable accumulators', await accumulators());
console.log(`\nmachine: ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`);
console.log(out.join('\n\n'));
