// `npm run bench:nexmark [-- --quick] [-- --runs 3] [-- --queries q0,q5] [-- --no-docs]`: runs every Nexmark query with
// `sluice run bench/nexmark/nexmark.ts` at parallelism 1 and 2 and, for the queries that have one, the hand-written
// single-threaded baseline (bench/nexmark/baselines/), one process per run, interleaved (p=1, baseline, p=2, then
// again), the median of --runs runs; prints a table and the ratio of Sluice p=1 to the baseline, and rewrites the
// marked result sections of docs/nexmark.md and docs/performance.md (not with --quick, --no-docs or --queries).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { BASELINES } from './baselines/index.ts';
import { QUERIES, QUERY_NAMES } from './queries/index.ts';
import { FLINK_FIGURES, RISINGWAVE_2023, bestFlinkPerCore, goalPerCore } from './published.ts';
import { CPU_LINE, MEASUREMENT_LINE } from './timing.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SLUICE = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const JOB = 'bench/nexmark/nexmark.ts';
const BASELINE = 'bench/nexmark/baselines/run.ts';

/** Events per run, sized for a few seconds per run on one core (the runner's default rate, 10 M events/s). */
const EVENTS: Readonly<Record<string, number>> = {
  q0: 40_000_000,
  q1: 30_000_000,
  q2: 40_000_000,
  q3: 20_000_000,
  q4: 10_000_000,
  q5: 10_000_000,
  q7: 20_000_000,
  q8: 20_000_000,
  q11: 15_000_000,
  q12: 20_000_000,
};

function argument(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
}

const quick = process.argv.includes('--quick');
const runs = Number(argument('runs') ?? (quick ? 1 : 3));
const queries = (argument('queries')?.split(',') ?? QUERY_NAMES).filter((q) => QUERIES[q] !== undefined);
const extraFlags = execFileSync(process.execPath, [SLUICE, 'run', JOB, '--help'], { cwd: ROOT, encoding: 'utf8' }).includes('--state-backend')
  ? ['--state-backend', 'memory']
  : [];

interface Run {
  readonly seconds: number;
  readonly rate: number;
  /** Events per CPU-second of all the process's threads (the Nexmark suite's throughput per core). */
  readonly perCpuSecond: number;
}

/** 1-minute load averages seen before each run: other processes on the machine skew wall-clock figures. */
const loads: number[] = [];

/** One process; its last stdout line is the measurement, its stderr the events-per-CPU-second line. */
function measure(what: string, args: readonly string[]): Run {
  loads.push(loadavg()[0] ?? 0);
  const child = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 24 });
  const match = MEASUREMENT_LINE.exec(child.stdout ?? '');
  const cpu = CPU_LINE.exec(child.stderr ?? '');
  if (child.status !== 0 || match === null || cpu === null) {
    throw new Error(`${what} failed (exit ${child.status}):\n${child.stderr}${child.stdout}`);
  }
  return { seconds: Number(match[3]), rate: Number(match[4]), perCpuSecond: Number(cpu[4]) };
}

function runOnce(query: string, events: number, parallelism: number): Run {
  const args = [SLUICE, 'run', JOB, '--query', query, '--events', String(events), '--parallelism', String(parallelism), ...extraFlags];
  return measure(`${query} at parallelism ${parallelism}`, args);
}

/** The hand-written baseline of `query` over the same events, in its own process as the engine's runs. */
function runBaseline(query: string, events: number): Run {
  return measure(`the ${query} baseline`, ['--import', 'tsx', BASELINE, '--query', query, '--events', String(events)]);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const k = (n: number | undefined): string => (n === undefined ? '-' : `${(n / 1000).toLocaleString('en-US', { maximumFractionDigits: 1 })} K`);

interface Row {
  readonly query: string;
  readonly events: number;
  readonly p1: number;
  readonly p2: number;
  readonly cpu1: number;
  readonly cpu2: number;
}

interface BaselineRow {
  readonly query: string;
  readonly p1: number;
  readonly baseline: number;
}

const rows: Row[] = [];
const baselineRows: BaselineRow[] = [];
const runsLine = (measured: readonly Run[]): string => measured.map((m) => fmt(m.rate)).join(', ');
for (const query of queries) {
  const events = Math.round((EVENTS[query] ?? 10_000_000) / (quick ? 10 : 1));
  const hasBaseline = BASELINES[query] !== undefined;
  const p1: Run[] = [];
  const p2: Run[] = [];
  const hand: Run[] = [];
  // Interleaved, so that a change in the machine's load during the runs touches all three alike.
  for (let r = 0; r < runs; r++) {
    p1.push(runOnce(query, events, 1));
    if (hasBaseline) hand.push(runBaseline(query, events));
    p2.push(runOnce(query, events, 2));
  }
  const row: Row = {
    query,
    events,
    p1: median(p1.map((m) => m.rate)),
    p2: median(p2.map((m) => m.rate)),
    cpu1: median(p1.map((m) => m.perCpuSecond)),
    cpu2: median(p2.map((m) => m.perCpuSecond)),
  };
  rows.push(row);
  console.log(`${query} p=1: ${fmt(row.p1)} events/s, ${fmt(row.cpu1)} events per CPU-second (runs: ${runsLine(p1)})`);
  console.log(`${query} p=2: ${fmt(row.p2)} events/s, ${fmt(row.cpu2)} events per CPU-second (runs: ${runsLine(p2)})`);
  if (hasBaseline) {
    const baseline = median(hand.map((m) => m.rate));
    baselineRows.push({ query, p1: row.p1, baseline });
    console.log(
      `${query} Sluice p=1 ${fmt(row.p1)} events/s, hand-written ${fmt(baseline)} events/s, ratio ${(row.p1 / baseline).toFixed(2)} (hand-written runs: ${runsLine(hand)})`,
    );
  }
}

const cpu = cpus();
const machine = `${cpu.length} x ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
const date = new Date().toISOString().slice(0, 10);

function table(): string {
  const lines = [
    '| query | events per run | p=1 events/s | p=2 events/s | p=2 events/s per core | events per CPU-second, p=1 / p=2 | goal per core | best Flink per core | RisingWave per core | goal met |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const goal = goalPerCore(r.query);
    // Per core as the Nexmark suite defines it (events per CPU-second), at both parallelisms.
    const met = Math.min(r.cpu1, r.cpu2) >= goal ? 'yes' : r.cpu1 >= goal ? 'at p=1 only' : 'no';
    lines.push(
      `| ${r.query} ${QUERIES[r.query]?.title ?? ''} | ${fmt(r.events)} | ${fmt(r.p1)} | ${fmt(r.p2)} | ${fmt(r.p2 / 2)} | ${fmt(r.cpu1)} / ${fmt(r.cpu2)} | ${fmt(goal)} | ${k(bestFlinkPerCore(r.query))} | ${k(RISINGWAVE_2023.perCore[r.query])} | ${met} |`,
    );
  }
  return lines.join('\n');
}

function baselineTable(): string {
  const lines = ['| query | Sluice p=1 events/s | hand-written events/s | ratio (Sluice / hand-written) |', '|---|---|---|---|'];
  for (const r of baselineRows) {
    lines.push(`| ${r.query} ${QUERIES[r.query]?.title ?? ''} | ${fmt(r.p1)} | ${fmt(r.baseline)} | ${(r.p1 / r.baseline).toFixed(2)} |`);
  }
  return lines.join('\n');
}

const section = [
  `Measured ${date} on ${machine}, with \`npm run bench:nexmark\` (median of ${runs} run${runs === 1 ? '' : 's'}; in-memory state; no checkpoints; the`,
  'generator at its default rate of 10 M events/s of event time). events/s = generated events / time from the first generated event to',
  'the last result at the sink, as printed by the runner. Events per CPU-second = events / CPU time of all the process\'s threads over',
  'the same interval: the Nexmark suite\'s "throughput/cores", the per-core figure the published ones are. Goal per core = the larger',
  'of the issue\'s absolute goal and 3x the best published Flink figure; "goal met" compares it with events per CPU-second at p=1 and',
  'p=2 (events/s per core = events/s / parallelism is also shown: on this 2-vCPU machine it also counts time waiting for a core).',
  `1-minute load average before the runs: ${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)} (a run itself adds about its parallelism).`,
  '',
  table(),
  '',
  'The limit per query: a hand-written single-threaded program (`bench/nexmark/baselines/`: plain Maps and arrays, no',
  'engine, the same generator read through the same source reader in the same batches, the same watermarks), timed the',
  'same way in its own process, its runs interleaved with the p=1 and p=2 runs above.',
  '',
  baselineTable(),
  '',
  'Published figures (events/s per core as their authors computed them, on other hardware):',
  ...[...FLINK_FIGURES, RISINGWAVE_2023].map((f) => `- ${f.system}: ${f.hardware} (${f.source}).`),
].join('\n');

function rewrite(path: string, begin: string, end: string): void {
  const file = fileURLToPath(new URL(`../../${path}`, import.meta.url));
  if (!existsSync(file)) return void console.warn(`${path}: not found, not updated`);
  const text = readFileSync(file, 'utf8');
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from < 0 || to < from) return void console.warn(`${path}: no ${begin} ... ${end} section, not updated`);
  writeFileSync(file, `${text.slice(0, from + begin.length)}\n${section}\n${text.slice(to)}`);
  console.log(`updated ${path}`);
}

console.log(`\n${section}\n`);
if (queries.length === QUERY_NAMES.length && !quick && !process.argv.includes('--no-docs')) {
  rewrite('docs/nexmark.md', '<!-- nexmark:results:begin -->', '<!-- nexmark:results:end -->');
  rewrite('docs/performance.md', '<!-- nexmark:begin -->', '<!-- nexmark:end -->');
} else {
  console.log('(a partial or --quick run: docs not updated)');
}
