// `npm run bench:nexmark [-- --quick] [-- --runs 3] [-- --queries q0,q5] [-- --no-docs]`: runs every Nexmark query with
// `sluice run bench/nexmark/nexmark.ts` at parallelism 1 and 2 (one process per run, the median of --runs runs),
// prints a table and rewrites the marked result sections of docs/nexmark.md and docs/performance.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { QUERIES, QUERY_NAMES } from './queries/index.ts';
import { FLINK_FIGURES, RISINGWAVE_2023, bestFlinkPerCore, goalPerCore } from './published.ts';
import { CPU_LINE, MEASUREMENT_LINE } from './timing.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SLUICE = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const JOB = 'bench/nexmark/nexmark.ts';

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

function runOnce(query: string, events: number, parallelism: number): Run {
  loads.push(loadavg()[0] ?? 0);
  const args = [SLUICE, 'run', JOB, '--query', query, '--events', String(events), '--parallelism', String(parallelism), ...extraFlags];
  const child = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 24 });
  const match = MEASUREMENT_LINE.exec(child.stdout ?? '');
  const cpu = CPU_LINE.exec(child.stderr ?? '');
  if (child.status !== 0 || match === null || cpu === null) {
    throw new Error(`${query} at parallelism ${parallelism} failed (exit ${child.status}):\n${child.stderr}${child.stdout}`);
  }
  return { seconds: Number(match[3]), rate: Number(match[4]), perCpuSecond: Number(cpu[4]) };
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

const rows: Row[] = [];
for (const query of queries) {
  const events = Math.round((EVENTS[query] ?? 10_000_000) / (quick ? 10 : 1));
  const rates: number[] = [];
  const perCpu: number[] = [];
  for (const parallelism of [1, 2]) {
    const measured: Run[] = [];
    for (let r = 0; r < runs; r++) measured.push(runOnce(query, events, parallelism));
    rates.push(median(measured.map((m) => m.rate)));
    perCpu.push(median(measured.map((m) => m.perCpuSecond)));
    console.log(
      `${query} p=${parallelism}: ${fmt(rates.at(-1)!)} events/s, ${fmt(perCpu.at(-1)!)} events per CPU-second (runs: ${measured.map((m) => fmt(m.rate)).join(', ')})`,
    );
  }
  rows.push({ query, events, p1: rates[0]!, p2: rates[1]!, cpu1: perCpu[0]!, cpu2: perCpu[1]! });
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
