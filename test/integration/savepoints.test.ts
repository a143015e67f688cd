import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restUrl, runSluice, startSluice, waitFor } from './sluice-process.ts';
import { seededRandom as random } from '../harness/seeded-random.ts';

/**
 * Savepoints end to end through the `sluice` command: stop with a savepoint through the REST API, restore at
 * another parallelism, and the commands `sluice checkpoints|savepoint|stop` against a running job.
 */

const FRAUD = 'examples/fraud-detection.ts';
const T0 = 1_700_000_000_000;
const MAX_DELAY_MS = 2000;
const WINDOW_MS = 5000;
const ACCOUNTS = 40;
/**
 * Large enough that the job is still reading when the stop arrives (a few seconds at parallelism 2), small enough
 * (under 128 MB) that the file makes one split per subtask at parallelism 2.
 */
const EVENTS = 1_500_000;


interface Row {
  account: string;
  windowStart: number;
  windowEnd: number;
  count: number;
  totalCents: number;
}

let dir: string;
let inputPath: string;
/** The window totals of the whole input, sorted, one JSON line each. */
let expected: string[];

/**
 * Transactions out of order by less than the max delay relative to the running maximum of any file prefix, so
 * none is late at any parallelism or split assignment: every one counts in its window.
 */
function generateInput(path: string): string[] {
  const next = random(7);
  const lines: string[] = new Array<string>(EVENTS);
  const rows = new Map<string, Row>();
  for (let i = 0; i < EVENTS; i++) {
    const t = {
      account: `a-${Math.floor(next() * ACCOUNTS)}`,
      amountCents: 1 + Math.floor(next() * 100_000),
      ts: T0 + i * 5 - Math.floor(next() * (MAX_DELAY_MS - 100)),
    };
    lines[i] = JSON.stringify(t);
    const windowStart = Math.floor(t.ts / WINDOW_MS) * WINDOW_MS;
    const key = `${t.account}|${windowStart}`;
    const row = rows.get(key) ?? { account: t.account, windowStart, windowEnd: windowStart + WINDOW_MS, count: 0, totalCents: 0 };
    row.count++;
    row.totalCents += t.amountCents;
    rows.set(key, row);
  }
  writeFileSync(path, lines.join('\n') + '\n');
  return [...rows.values()].map((r) => JSON.stringify(r)).sort();
}

/** Every line of the committed part files, sorted (duplicates kept, so that they show). */
function committedRows(output: string): string[] {
  return readdirSync(output)
    .filter((f) => /^part-\d+-\d+\.jsonl$/.test(f))
    .flatMap((f) => readFileSync(join(output, f), 'utf8').split('\n'))
    .filter((l) => l.length > 0)
    .sort();
}

const hasPartFile = (output: string): true | undefined => {
  try {
    return readdirSync(output).some((f) => f.startsWith('part-')) ? true : undefined;
  } catch {
    return undefined;
  }
};

async function api(url: string, method: 'GET' | 'POST' = 'GET'): Promise<{ status: number; body: Record<string, unknown> }> {
  // The API refuses POSTs that are not JSON (a web page could forge those).
  const res = await fetch(url, method === 'POST' ? { method, headers: { 'content-type': 'application/json' }, body: '{}' } : { method });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-savepoints-'));
  inputPath = join(dir, 'transactions.jsonl');
  expected = generateInput(inputPath);
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const fraudArgs = (output: string, checkpointDir: string, parallelism: number): string[] => [
  'run', FRAUD,
  '--input', inputPath,
  '--output', output,
  '--parallelism', String(parallelism),
  '--max-delay-ms', String(MAX_DELAY_MS),
  '--window-ms', String(WINDOW_MS),
  '--checkpoint-dir', checkpointDir,
  '--checkpoint-interval-ms', '200',
];

describe('stop with a savepoint, then restore at another parallelism', () => {
  let savepoint: string;
  let stoppedOutput: string;

  it('stops examples/fraud-detection.ts at parallelism 2 part way through its input, exit code 0', async () => {
    stoppedOutput = join(dir, 'out-p2');
    const checkpointDir = join(dir, 'ck-p2');
    const { done } = startSluice(fraudArgs(stoppedOutput, checkpointDir, 2));
    const url = await waitFor('rest.json', () => restUrl(checkpointDir));
    await waitFor('a committed part file', () => hasPartFile(stoppedOutput));

    const jobs = await api(`${url}/jobs`);
    const [job] = jobs.body['jobs'] as { id: string; name: string; status: string }[];
    expect(job).toMatchObject({ name: 'fraud-detection', status: 'running' });
    const details = await api(`${url}/jobs/${job!.id}`);
    expect(details.body).toMatchObject({ parallelism: 2, maxParallelism: 128, status: 'running' });
    expect(details.body['recordsRead']).toBeGreaterThan(0);
    const history = await api(`${url}/jobs/${job!.id}/checkpoints`);
    expect((history.body['checkpoints'] as { status: string }[]).some((c) => c.status === 'completed')).toBe(true);

    const stop = await api(`${url}/jobs/${job!.id}/stop`, 'POST');
    expect(stop.status, JSON.stringify(stop.body)).toBe(200);
    savepoint = stop.body['path'] as string;
    const run = await done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`sluice: job "fraud-detection" stopped with savepoint ${savepoint}:`);
    expect(savepoint.startsWith(join(checkpointDir, 'savepoints', 'savepoint-'))).toBe(true);
    expect(readdirSync(savepoint)).toContain('_metadata');
    expect(existsSync(join(checkpointDir, 'rest.json'))).toBe(false);

    // Stopped part way: some windows are committed, not all; none twice.
    const partial = committedRows(stoppedOutput);
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.length).toBeLessThan(expected.length);
    expect(new Set(partial).size).toBe(partial.length);
    expect(expected).toEqual(expect.arrayContaining(partial));
  });

  it.each([1, 3])('restores the savepoint at parallelism %i and ends with exactly the reference totals', async (parallelism) => {
    const output = join(dir, `out-restored-p${parallelism}`);
    cpSync(stoppedOutput, output, { recursive: true });
    const run = await runSluice([...fraudArgs(output, join(dir, `ck-restored-p${parallelism}`), parallelism), '--restore', savepoint]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`restored from savepoint ${savepoint}`);
    expect(committedRows(output)).toEqual(expected);
    expect(readdirSync(output).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('refuses the savepoint with another --max-parallelism: exit code 2 and what to do', async () => {
    const checkpointDir = join(dir, 'ck-other-max');
    const run = await runSluice([...fraudArgs(join(dir, 'out-other-max'), checkpointDir, 2), '--max-parallelism', '64', '--restore', savepoint]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`error: cannot restore from savepoint ${savepoint}: it was taken with maxParallelism 128 but the job now has 64`);
    expect(run.stderr).toContain('run with --max-parallelism 128');
    expect(existsSync(join(checkpointDir, 'restore.json'))).toBe(false);
  });

  it('refuses a --restore path that is not a savepoint: exit code 2', async () => {
    const run = await runSluice([...fraudArgs(join(dir, 'out-bad'), join(dir, 'ck-bad'), 1), '--restore', join(dir, 'no-such-savepoint')]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`--restore ${join(dir, 'no-such-savepoint')}: no such directory`);
  });
});

describe('sluice checkpoints / savepoint / stop against a running job', () => {
  const JOB = 'test/fixtures/jobs/throttled-window-counts.ts';
  const EVENTS_THROTTLED = 24_000;

  it('lists checkpoints, takes a savepoint, stops the job; the same command then continues from the savepoint', async () => {
    const reference = join(dir, 'throttled-reference');
    const ref = await runSluice(['run', JOB, '--output', reference, '--events', String(EVENTS_THROTTLED), '--rate', '1000000']);
    expect(ref.code, ref.stderr).toBe(0);

    const output = join(dir, 'throttled-out');
    const checkpointDir = join(dir, 'throttled-ck');
    const args = ['run', JOB, '--output', output, '--events', String(EVENTS_THROTTLED), '--parallelism', '2', '--checkpoint-dir', checkpointDir, '--checkpoint-interval-ms', '100'];
    const { done } = startSluice([...args, '--rate', '1500']);
    const url = await waitFor('rest.json', () => restUrl(checkpointDir));
    await waitFor('a committed part file', () => hasPartFile(output));

    const listed = await runSluice(['checkpoints', '--checkpoint-dir', checkpointDir]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^job "throttled-window-counts" \(.+\), running$/m);
    expect(listed.stdout).toMatch(/^\d+\s+checkpoint\s+completed\s/m);

    const taken = await runSluice(['savepoint', '--checkpoint-dir', checkpointDir]);
    expect(taken.code, taken.stderr).toBe(0);
    const intermediate = taken.stdout.trim();
    expect(readdirSync(intermediate)).toContain('_metadata');

    const json = await runSluice(['checkpoints', '--url', url, '--json']);
    const entries = (JSON.parse(json.stdout) as { checkpoints: { savepoint: boolean; path: string | null; status: string }[] }).checkpoints;
    expect(entries).toContainEqual(expect.objectContaining({ savepoint: true, status: 'completed', path: intermediate }));

    const stopped = await runSluice(['stop', '--port', new URL(url).port]);
    expect(stopped.code, stopped.stderr).toBe(0);
    const final = stopped.stdout.trim();
    const run = await done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`stopped with savepoint ${final}`);
    expect(committedRows(output).length).toBeLessThan(committedRows(reference).length);

    // After the stop the job is not running: the commands say so.
    const after = await runSluice(['savepoint', '--checkpoint-dir', checkpointDir]);
    expect(after.code).toBe(1);
    expect(after.stderr).toContain('no running job found');

    // The identical command (without --restore) continues from the stop's savepoint, not from an older checkpoint.
    const resumed = await runSluice([...args, '--rate', '1000000']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`restored from savepoint ${final}`);
    expect(committedRows(output)).toEqual(committedRows(reference));
  });
});
