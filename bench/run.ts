// Throughput benchmarks: each Sluice job against a hand-written loop doing the same work, in the same process.
// Usage: npm run bench [-- --quick]
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { runOnThreads } from 'sluice';
import { keyedWindowBaseline, statelessBaseline } from './baselines.ts';
import { fileJobBenchmark } from './file-job.ts';

const quick = process.argv.includes('--quick');
const job = (name: string) => fileURLToPath(new URL(`./jobs/${name}.ts`, import.meta.url));

async function time<T>(fn: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { seconds: Number(process.hrtime.bigint() - start) / 1e9, value };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const rows: string[][] = [];

async function compare(name: string, events: number, flags: Record<string, unknown>, jobName: string, baseline: () => Promise<unknown>) {
  const base = await time(baseline);
  const baseRate = events / base.seconds;
  for (const parallelism of [1, 2]) {
    const run = await time(() => runOnThreads({ modulePath: job(jobName), flags, jobOptions: { parallelism } }));
    const rate = events / run.seconds;
    rows.push([name, String(parallelism), fmt(rate), fmt(rate / parallelism), fmt(baseRate), (rate / baseRate).toFixed(2)]);
    console.log(`${name} p=${parallelism}: ${fmt(rate)} events/s (${fmt(rate / parallelism)} per core); baseline ${fmt(baseRate)} events/s; ratio ${(rate / baseRate).toFixed(2)}`);
  }
}

const stateless = quick ? 1_000_000 : 10_000_000;
const keyed = quick ? 500_000 : 5_000_000;
await compare('stateless map/filter', stateless, { events: stateless }, 'stateless', () => statelessBaseline(stateless));
// 1 ms of event time per record: 1,000 accounts give ~10 records per account and window, 10,000 give ~1
// (then nearly every record creates a window, its state and its timer: the worst case).
for (const keys of [1_000, 10_000]) {
  await compare(`keyed 10 s tumbling count/sum, ${keys} keys`, keyed, { events: keyed, keys }, 'keyed-window', () => keyedWindowBaseline(keyed, keys));
}
const file = await fileJobBenchmark(quick ? 300_000 : 2_000_000);
rows.push(['fraud-detection file job', '1', fmt(file.jobRate), fmt(file.jobRate), fmt(file.baselineRate), (file.jobRate / file.baselineRate).toFixed(2)]);
console.log(`fraud-detection file job p=1: ${fmt(file.jobRate)} events/s; plain JSONL loop ${fmt(file.baselineRate)} events/s; ratio ${(file.jobRate / file.baselineRate).toFixed(2)}`);

console.log(`\nmachine: ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`);
console.log('| benchmark | parallelism | events/s | events/s per core | baseline events/s (1 thread) | ratio to baseline |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
