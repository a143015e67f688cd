/**
 * `npm start`: generates a day's worth of card transactions, runs examples/fraud-detection.ts on them at
 * parallelism 2 on worker threads (the code path of `sluice run`), and prints what came out.
 * Everything goes to ./.sluice/demo, which is recreated on every run.
 *
 * `npm start -- --write-input FILE`: only writes the transactions to FILE (which must not exist yet), as input for
 * `npx sluice run examples/fraud-detection.ts --input FILE ...`.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runOnThreads } from 'sluice';
import type { AccountWindowTotal } from './fraud-detection.ts';

const RECORDS = 1_000_000;
const ACCOUNTS = 1_000;
const LATE = 20;
const MAX_DELAY_MS = 5_000;
const WINDOW_MS = 10_000;
const START = Date.UTC(2024, 0, 1);
/** One transaction per millisecond of event time: 1,000 s, 100 windows. */
const EVENT_INTERVAL_MS = 1;

const JOB = fileURLToPath(new URL('./fraud-detection.ts', import.meta.url));
const demoDir = resolve('.sluice', 'demo');
const paths = {
  input: join(demoDir, 'transactions.jsonl'),
  output: join(demoDir, 'window-totals'),
  lateOutput: join(demoDir, 'late-events.jsonl'),
  deadLetter: join(demoDir, 'dead-letters.jsonl'),
};

/** Seeded PRNG (mulberry32): the same input on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A third of the transactions arrive up to 4 s out of order (on time for a 5 s max delay). The late ones lie two
 * minutes behind, in the first half of the file: the source reads the file as one split per subtask, and the
 * window operator's watermark is the minimum over the subtasks, so only the subtask reading the earlier half can
 * make an event late. Two lines are malformed.
 */
function generateInput(path: string): { lines: number } {
  const next = random(7);
  const lateAt = new Set(Array.from({ length: LATE }, (_, k) => Math.floor(RECORDS * (0.15 + (0.3 * k) / LATE))));
  const malformedAt = new Map([
    [123_456, '{"account":"a-1","amountCents":"12.50","ts":1704067323456}'],
    [654_321, '{"account":"a-2","amou'],
  ]);
  // 'wx': never overwrite a file that is already there.
  const fd = openSync(path, 'wx');
  let chunk = '';
  let lines = 0;
  const emit = (line: string): void => {
    chunk += line + '\n';
    lines++;
    if (chunk.length > 1 << 20) {
      writeSync(fd, chunk);
      chunk = '';
    }
  };
  for (let i = 0; i < RECORDS; i++) {
    const onTime = START + i * EVENT_INTERVAL_MS;
    const ts = next() < 1 / 3 ? onTime - Math.floor(next() * 4_000) : onTime;
    const account = `a-${Math.floor(next() * ACCOUNTS)}`;
    // Mostly small amounts, now and then a large one.
    const amountCents = next() < 0.01 ? 50_000 + Math.floor(next() * 500_000) : 100 + Math.floor(next() * 10_000);
    emit(`{"account":"${account}","amountCents":${amountCents},"ts":${ts}}`);
    if (lateAt.has(i)) emit(`{"account":"${account}","amountCents":${amountCents},"ts":${onTime - 120_000}}`);
    const bad = malformedAt.get(i);
    if (bad !== undefined) emit(bad);
  }
  writeSync(fd, chunk);
  closeSync(fd);
  return { lines };
}

function readJsonLines<T>(path: string): T[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as T);
}

const count = (n: number): string => n.toLocaleString('en-US');
const dollars = (cents: number): string => `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
const show = (path: string): string => relative(process.cwd(), path) || '.';

/** The value of `--write-input FILE` (or `--write-input=FILE`), if given; any other argument is a mistake. */
function writeInputArgument(args: readonly string[]): string | undefined {
  if (args.length === 0) return undefined;
  const [flag, value] = args[0]!.includes('=') ? args[0]!.split(/=(.*)/s) : [args[0], args[1]];
  const rest = args[0]!.includes('=') ? args.slice(1) : args.slice(2);
  if (flag !== '--write-input' || value === undefined || value === '' || rest.length > 0) {
    console.error('usage: npm start [-- --write-input FILE]');
    process.exit(2);
  }
  return value;
}

const writeInput = writeInputArgument(process.argv.slice(2));
if (writeInput !== undefined) {
  if (existsSync(writeInput)) {
    console.error(`error: ${writeInput} already exists; give a new file name (nothing was written)`);
    process.exit(2);
  }
  mkdirSync(dirname(resolve(writeInput)), { recursive: true });
  const { lines } = generateInput(writeInput);
  console.log(`Wrote ${count(lines)} lines (${count(RECORDS)} transactions, ${LATE} of them late, 2 malformed) to ${writeInput}`);
  console.log(`Run: npx sluice run examples/fraud-detection.ts --input ${writeInput} --output out/`);
  process.exit(0);
}

rmSync(demoDir, { recursive: true, force: true });
mkdirSync(demoDir, { recursive: true });

console.log(`Generating ${count(RECORDS)} transactions of ${count(ACCOUNTS)} accounts...`);
const generatedAt = Date.now();
const { lines } = generateInput(paths.input);
console.log(`  ${count(lines)} lines in ${show(paths.input)} (${((Date.now() - generatedAt) / 1000).toFixed(1)} s)`);

console.log('Running examples/fraud-detection.ts at parallelism 2 (worker threads)...');
const result = await runOnThreads({
  modulePath: JOB,
  flags: { ...paths, maxDelayMs: MAX_DELAY_MS, windowMs: WINDOW_MS },
  jobOptions: { parallelism: 2 },
});

const partFiles = readdirSync(paths.output).filter((f) => f.startsWith('part-'));
const rows = partFiles.flatMap((f) => readJsonLines<AccountWindowTotal>(join(paths.output, f)));
const perWindow = new Map<number, AccountWindowTotal[]>();
for (const row of rows) {
  const list = perWindow.get(row.windowStart);
  if (list === undefined) perWindow.set(row.windowStart, [row]);
  else list.push(row);
}
const transactionsIn = (list: readonly AccountWindowTotal[]): number => list.reduce((sum, r) => sum + r.count, 0);
let busiest: AccountWindowTotal[] = [];
for (const list of perWindow.values()) if (transactionsIn(list) > transactionsIn(busiest)) busiest = list;
const top = [...busiest].sort((a, b) => b.totalCents - a.totalCents).slice(0, 5);
const late = readJsonLines<unknown>(paths.lateOutput).length;
const deadLetters = readJsonLines<unknown>(paths.deadLetter).length;
const seconds = result.durationMs / 1000;

console.log('');
console.log(`Input records:   ${count(result.sourceRecords)} valid of ${count(lines)} lines`);
console.log(`Windows written: ${count(rows.length)} account windows in ${perWindow.size} windows of ${WINDOW_MS / 1000} s (${partFiles.length} part files in ${show(paths.output)})`);
if (top[0] !== undefined) {
  console.log(`Busiest window:  ${new Date(top[0].windowStart).toISOString()} .. ${new Date(top[0].windowEnd).toISOString()}, ${count(transactionsIn(busiest))} transactions`);
  console.log('  top 5 accounts by total:');
  for (const r of top) console.log(`    ${r.account.padEnd(6)} ${dollars(r.totalCents).padStart(12)}  in ${r.count} transactions`);
}
console.log(`Late events:     ${count(late)} (${show(paths.lateOutput)})`);
console.log(`Dead letters:    ${count(deadLetters)} (${show(paths.deadLetter)})`);
console.log(`Duration:        ${seconds.toFixed(2)} s, ${count(Math.round(result.sourceRecords / Math.max(seconds, 0.001)))} events/s`);
