// Exactly-once under crashes, in the spirit of Flink's EventTimeWindowCheckpointingITCase and Kafka Streams'
// EosIntegrationTest: the fraud-detection example runs as a child process with checkpoints, is SIGKILLed at random
// moments and at chosen points of the checkpoint protocol (SLUICE_CRASH_AT), fails in user code, in a snapshot and
// in a restore (SLUICE_FAIL_AT), and the identical command run again must leave every (account, window) row exactly
// once, with exact count and total, and nothing hidden in the output directory.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completeCheckpoints,
  committedLines,
  diffLines,
  expectExactOutput,
  generateInput,
  lateEvents,
  random,
  referenceTotals,
  runChild,
  startChild,
  type ChildRun,
  type InputSpec,
  type Reference,
} from './crash-harness.ts';

const EXAMPLE = 'examples/fraud-detection.ts';
const FIXTURE = 'test/fixtures/crash-window-job.ts';

const SPEC: InputSpec = {
  records: 600_000,
  accounts: 50,
  t0: 1_700_000_000_000,
  stepMs: 2,
  maxDelayMs: 2000,
  windowMs: 5000,
  malformedAfter: [1234, 222_222],
};

let root: string;
let inputPath: string;
let reference: Reference;
let malformedLines: number;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sluice-crash-'));
  const input = generateInput(SPEC, 7);
  expect(lateEvents(input.records, SPEC)).toBe(0);
  inputPath = join(root, 'transactions.jsonl');
  writeFileSync(inputPath, input.text);
  reference = referenceTotals(input.records, SPEC.windowMs);
  malformedLines = input.malformedLines;
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

let caseNumber = 0;

/** A fresh output directory and checkpoint folder for one scenario. */
function scenario(name: string): { output: string; checkpoints: string } {
  const dir = join(root, `${++caseNumber}-${name}`);
  mkdirSync(dir);
  return { output: join(dir, 'out'), checkpoints: join(dir, 'checkpoints') };
}

interface JobArgs {
  readonly job?: string;
  readonly output: string;
  readonly checkpoints: string;
  readonly intervalMs: number;
  readonly parallelism: number;
  readonly extra?: readonly string[];
}

function jobArgs(a: JobArgs): string[] {
  return [
    'run', a.job ?? EXAMPLE,
    '--input', inputPath,
    '--output', a.output,
    '--checkpoint-dir', a.checkpoints,
    '--checkpoint-interval-ms', String(a.intervalMs),
    '--parallelism', String(a.parallelism),
    '--max-delay-ms', String(SPEC.maxDelayMs),
    '--window-ms', String(SPEC.windowMs),
    ...(a.extra ?? []),
  ];
}

/** Flags selecting the state backend; RocksDB keeps its state beside the scenario's checkpoints. */
function backendArgs(backend: 'memory' | 'rocksdb', checkpoints: string): string[] {
  return backend === 'memory' ? [] : ['--state-backend', 'rocksdb', '--state-dir', join(checkpoints, '..', 'state')];
}

/** Re-runs the identical command, uninterrupted, until it exits 0 (a few tries); returns the successful run. */
async function rerunUntilSuccess(args: readonly string[], history: ChildRun[]): Promise<ChildRun> {
  for (let i = 0; i < 3; i++) {
    const run = await runChild(args);
    history.push(run);
    if (run.code === 0) return run;
  }
  throw new Error(`the job never succeeded; last stderr:\n${history[history.length - 1]!.stderr}`);
}

function describeHistory(history: readonly ChildRun[]): string {
  return history
    .map((r, i) => `run ${i + 1}: ${r.signal ?? `exit ${r.code}`}${r.killedByTest ? ' (killed by the test)' : ''}\n${r.stderr.trim()}`)
    .join('\n---\n');
}

describe('fraud-detection: SIGKILL at random moments, then the identical command again', () => {
  /**
   * When records start to reach the sink (its first hidden file appears) and when the run ends, in ms after the
   * spawn of an uninterrupted run from scratch, per parallelism: kills are scheduled by them.
   */
  const timing = new Map<number, { flowMs: number; endMs: number }>();

  beforeAll(async () => {
    for (const parallelism of [1, 2]) {
      const dirs = scenario(`baseline-p${parallelism}`);
      const spawnedAt = Date.now();
      const started = startChild(jobArgs({ ...dirs, intervalMs: 100, parallelism }));
      let ended = false;
      void started.done.then(() => (ended = true));
      let flowMs: number | undefined;
      while (!ended && flowMs === undefined) {
        if (existsSync(dirs.output) && readdirSync(dirs.output).length > 0) flowMs = Date.now() - spawnedAt;
        else await new Promise((r) => setTimeout(r, 5));
      }
      const run = await started.done;
      const endMs = Date.now() - spawnedAt;
      expect(run.code, run.stderr).toBe(0);
      expectExactOutput(dirs.output, reference, `uninterrupted run at parallelism ${parallelism}\n${run.stderr}`);
      // The malformed lines are skipped, each counted once by the split that holds it.
      const skipped = [...run.stderr.matchAll(/skipped (\d+) malformed line\(s\)/g)].reduce((n, m) => n + Number(m[1]), 0);
      expect(skipped, run.stderr).toBe(malformedLines);
      timing.set(parallelism, { flowMs: flowMs ?? endMs / 2, endMs });
    }
  });

  // Seeds choose parallelism, checkpoint interval, how many kills in a row and when.
  it.each([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])('seed %i: every window total exactly once', (seed) => killAndRerun(seed, 'memory'));
  // The same with keyed state in RocksDB (incremental checkpoints, local recovery from the state directory).
  it.each([21, 22, 23, 24, 25, 26])('seed %i, --state-backend rocksdb: every window total exactly once', (seed) =>
    killAndRerun(seed, 'rocksdb'),
  );

  async function killAndRerun(seed: number, backend: 'memory' | 'rocksdb'): Promise<void> {
    const next = random(seed * 7919);
    const parallelism = 1 + (seed % 2);
    const intervalMs = 50 + Math.floor(next() * 151);
    const kills = 1 + Math.floor(next() * 3);
    const { flowMs, endMs } = timing.get(parallelism)!;
    // About one kill in five lands in start-up (or restore), the rest while records flow. A restored run has less
    // to do, so a later kill may come after its end (then the next run restores the final checkpoint and finishes).
    const delays = Array.from({ length: kills }, () => Math.max(50, Math.floor(flowMs + (endMs - flowMs) * (next() * 1.2 - 0.25))));
    let dirs = scenario(`seed-${seed}`);
    const extra = backendArgs(backend, dirs.checkpoints);
    const history: ChildRun[] = [];
    // The first kill must hit a running job, or the seed tests nothing: on a machine fast enough to finish first,
    // start over with half the delay.
    for (let first = delays[0]!; ; first = Math.floor(first / 2)) {
      const run = await runChild(jobArgs({ ...dirs, intervalMs, parallelism, extra }), { killAfterMs: first });
      history.push(run);
      if (run.killedByTest) break;
      expect(run.code, describeHistory(history)).toBe(0);
      expect(first, describeHistory(history)).toBeGreaterThan(50);
      dirs = scenario(`seed-${seed}`);
    }
    const args = jobArgs({ ...dirs, intervalMs, parallelism, extra: backendArgs(backend, dirs.checkpoints) });
    for (const killAfterMs of delays.slice(1)) {
      const run = await runChild(args, { killAfterMs });
      history.push(run);
      if (!run.killedByTest) expect(run.code, describeHistory(history)).toBe(0);
    }
    const final = await rerunUntilSuccess(args, history);
    const context = `seed ${seed}, ${backend}, parallelism ${parallelism}, interval ${intervalMs} ms, kills after ${delays.join(', ')} ms\n${describeHistory(history)}`;
    expect(final.code, context).toBe(0);
    expectExactOutput(dirs.output, reference, context);
  }
});

describe('fraud-detection: SIGKILL at each point of the checkpoint protocol (SLUICE_CRASH_AT)', () => {
  interface CrashCase {
    readonly point: string;
    readonly job?: string;
    readonly parallelism: number;
    readonly intervalMs: number;
    readonly extra?: readonly string[];
    /** What the crash must have left behind, checked before the rerun. */
    readonly leftBehind: (dirs: { output: string; checkpoints: string }) => void;
  }
  const hidden = (output: string, suffix: string) => (existsSync(output) ? readdirSync(output) : []).filter((n) => n.startsWith('.') && n.endsWith(suffix));
  const cases: CrashCase[] = [
    {
      // Inside a checkpoint's asynchronous phase: a task's state file is written, its ack not sent.
      point: 'after-task-state-written:8',
      parallelism: 2,
      intervalMs: 100,
      leftBehind: ({ checkpoints }) => {
        const dirs = readdirSync(checkpoints).filter((n) => /^chk-\d+$/.test(n));
        const newest = dirs.sort().at(-1)!;
        expect(existsSync(join(checkpoints, newest, '_metadata'))).toBe(false);
        expect(readdirSync(join(checkpoints, newest)).some((n) => /^task-\d+-\d+(-e\d+)?\.state$/.test(n))).toBe(true);
      },
    },
    {
      point: 'after-task-state-written:4',
      parallelism: 1,
      intervalMs: 60,
      leftBehind: ({ checkpoints }) => expect(readdirSync(checkpoints).some((n) => /^chk-\d+$/.test(n))).toBe(true),
    },
    {
      // Between pre-commit and commit: pending files exist, their checkpoint is not complete.
      point: 'after-prepare-commit:3',
      parallelism: 2,
      intervalMs: 150,
      leftBehind: ({ output }) => expect(hidden(output, '.pending').length).toBeGreaterThan(0),
    },
    {
      // The checkpoint is complete on disk; no sink has committed its files.
      point: 'after-metadata-commit:3',
      parallelism: 1,
      intervalMs: 80,
      leftBehind: ({ checkpoints }) => {
        // Whether that checkpoint had rows to pre-commit depends on how early it came; the final-checkpoint case
        // below always has.
        const newest = readdirSync(checkpoints).filter((n) => /^chk-\d+$/.test(n)).sort().at(-1)!;
        expect(completeCheckpoints(checkpoints).at(-1)).toBe(Number(newest.slice(4)));
      },
    },
    {
      // The only checkpoint is the final one: complete on disk, nothing committed; the rerun only commits.
      point: 'after-metadata-commit:1',
      parallelism: 2,
      intervalMs: 600_000,
      leftBehind: ({ output, checkpoints }) => {
        expect(completeCheckpoints(checkpoints)).toHaveLength(1);
        expect(readdirSync(output).filter((n) => !n.startsWith('.'))).toEqual([]);
        expect(hidden(output, '.pending').length).toBeGreaterThan(0);
      },
    },
    {
      // Halfway through a commit that renames several part files (small roll-over size).
      point: 'during-commit:4',
      job: FIXTURE,
      parallelism: 2,
      intervalMs: 120,
      extra: ['--roll-size-bytes', '4000'],
      leftBehind: ({ output }) => {
        expect(committedLines(output).length).toBeGreaterThan(0);
        expect(hidden(output, '.pending').length).toBeGreaterThan(0);
      },
    },
  ];

  const rocksdbCases = cases.map((c) => ({ ...c, backend: 'rocksdb' as const }));
  it.each([...cases.map((c) => ({ ...c, backend: 'memory' as const })), ...rocksdbCases])('$point (parallelism $parallelism, interval $intervalMs ms, $backend)', async (c) => {
    const dirs = scenario(c.point.replace(':', '-'));
    const extra = [...(c.extra ?? []), ...backendArgs(c.backend, dirs.checkpoints)];
    const args = jobArgs({ ...dirs, job: c.job, intervalMs: c.intervalMs, parallelism: c.parallelism, extra });
    const crashed = await runChild(args, { env: { SLUICE_CRASH_AT: c.point } });
    const history: ChildRun[] = [crashed];
    expect(crashed.signal, describeHistory(history)).toBe('SIGKILL');
    expect(crashed.stderr).toContain(`SLUICE_CRASH_AT ${c.point} reached`);
    c.leftBehind(dirs);
    const final = await rerunUntilSuccess(args, history);
    if (completeCheckpoints(dirs.checkpoints).length > 0) expect(final.stderr).toMatch(/restored from checkpoint \d+/);
    expectExactOutput(dirs.output, reference, `${c.point}\n${describeHistory(history)}`);
  });

  it('every crash point in a row on the same folders, then the identical command (many part files per commit)', async () => {
    // With small part files each commit renames several, so a restored run may also die inside the commit of the
    // restored files at its start.
    const dirs = scenario('crash-points-in-a-row');
    const args = jobArgs({ ...dirs, job: FIXTURE, intervalMs: 100, parallelism: 2, extra: ['--roll-size-bytes', '3000'] });
    const points = ['after-prepare-commit:2', 'during-commit:1', 'after-metadata-commit:2', 'after-task-state-written:3', 'during-commit:3'];
    const history: ChildRun[] = [];
    for (const point of points) {
      const run = await runChild(args, { env: { SLUICE_CRASH_AT: point } });
      history.push(run);
      expect(run.signal, describeHistory(history)).toBe('SIGKILL');
      expect(run.stderr).toContain(`SLUICE_CRASH_AT ${point} reached`);
    }
    const final = await rerunUntilSuccess(args, history);
    expect(final.stderr).toMatch(/restored from checkpoint \d+/);
    expectExactOutput(dirs.output, reference, describeHistory(history));
  });

  it('a run restored from the final checkpoint deletes what earlier attempts left pending', async () => {
    // Attempt A dies between pre-commit and commit (pending files of A stay); attempt B's first checkpoint is the
    // final one and it dies before committing; run C restores that final checkpoint and only commits restored
    // files: it never commits a file of its own, yet must sweep A's leftovers.
    const dirs = scenario('final-restore-sweep');
    const a = await runChild(jobArgs({ ...dirs, intervalMs: 100, parallelism: 2 }), { env: { SLUICE_CRASH_AT: 'after-prepare-commit:3' } });
    expect(a.signal).toBe('SIGKILL');
    const slow = jobArgs({ ...dirs, intervalMs: 600_000, parallelism: 2 });
    const b = await runChild(slow, { env: { SLUICE_CRASH_AT: 'after-metadata-commit:1' } });
    expect(b.signal, b.stderr).toBe('SIGKILL');
    const c = await runChild(slow);
    expect(c.code, c.stderr).toBe(0);
    expect(c.stderr).toContain('0 records read');
    expectExactOutput(dirs.output, reference, describeHistory([a, b, c]));
  });
});

describe('fraud-detection: output while the job runs, and --fresh', () => {
  /**
   * Runs the job and SIGKILLs it the moment a committed part file shows up in its output directory (polled every
   * 10 ms); returns the run and whether a part file was seen.
   */
  async function killAtFirstPartFile(dirs: { output: string; checkpoints: string }): Promise<{ run: ChildRun; seen: boolean }> {
    const started = startChild(jobArgs({ ...dirs, intervalMs: 100, parallelism: 2 }));
    let ended = false;
    void started.done.then(() => (ended = true));
    let seen = false;
    while (!ended && !seen) {
      seen = existsSync(dirs.output) && readdirSync(dirs.output).some((n) => n.startsWith('part-'));
      if (seen) started.kill();
      else await new Promise((r) => setTimeout(r, 10));
    }
    return { run: await started.done, seen };
  }

  it('commits part files after each completed checkpoint, not only at the end', async () => {
    const dirs = scenario('visible-during-run');
    const { run, seen } = await killAtFirstPartFile(dirs);
    // Killed by the test on sight of the first committed file: the job was still running then.
    expect(seen, run.stderr).toBe(true);
    expect(run.killedByTest, run.stderr).toBe(true);
    expect(run.stderr).not.toContain('records read');
    // What is committed is final and correct, and only part of the result.
    const lines = committedLines(dirs.output);
    const diff = diffLines(lines, reference);
    expect(diff.duplicated).toBe(0);
    expect(diff.unexpected).toEqual([]);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThan(reference.lines.length);
  });

  it('--fresh discards the checkpoints and starts from the beginning', async () => {
    const dirs = scenario('fresh');
    const { run: killed } = await killAtFirstPartFile(dirs);
    expect(killed.killedByTest, killed.stderr).toBe(true);
    expect(completeCheckpoints(dirs.checkpoints).length).toBeGreaterThan(0);
    // A new output directory: had the run restored the checkpoint, the rows committed before it would be missing.
    const output = join(dirs.output, '..', 'fresh-out');
    const run = await runChild(jobArgs({ output, checkpoints: dirs.checkpoints, intervalMs: 100, parallelism: 2, extra: ['--fresh'] }));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/--fresh: discarded \d+ checkpoint\(s\)/);
    expect(run.stderr).not.toContain('restored from checkpoint');
    expectExactOutput(output, reference, run.stderr);
  });
});

describe('fraud-detection: failures inside the job go through the restart strategy', () => {
  it('a user function that throws once: restart from the latest checkpoint, exact output', async () => {
    const dirs = scenario('user-function');
    const marker = join(root, 'user-function.marker');
    // Past the middle of event time, so that checkpoints have completed before it throws.
    const failFromTs = SPEC.t0 + Math.floor(SPEC.records * 0.6) * SPEC.stepMs;
    const args = jobArgs({
      ...dirs,
      job: FIXTURE,
      intervalMs: 100,
      parallelism: 2,
      extra: ['--fail-once-marker', marker, '--fail-from-ts', String(failFromTs), '--restart-delay-ms', '50'],
    });
    const run = await runChild(args);
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(marker)).toBe(true);
    expect(run.stderr).toMatch(/job failed: .*injected user-function failure.*; restart 1 in 50 ms/);
    expect(run.stderr).toMatch(/restored from checkpoint \d+/);
    expectExactOutput(dirs.output, reference, run.stderr);
  });

  it('a failing snapshot, then a failing restore (SLUICE_FAIL_AT): restarts until a restore succeeds, exact output', async () => {
    const dirs = scenario('snapshot-restore');
    // Parallelism 2 takes 5 task snapshots per checkpoint: the 13th is in the third checkpoint, after two complete ones.
    const args = jobArgs({ ...dirs, intervalMs: 80, parallelism: 2, extra: ['--restart-delay-ms', '50'] });
    const run = await runChild(args, { env: { SLUICE_FAIL_AT: 'snapshot:13,restore:1' } });
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stderr.split('\n');
    const failedSnapshot = lines.findIndex((l) => /job failed: .*injected failure at snapshot \(occurrence 13.*; restart 1 in 50 ms/.test(l));
    const failedRestore = lines.findIndex((l) => /job failed: .*injected failure at restore \(occurrence 1.*; restart 2 in 50 ms/.test(l));
    expect(failedSnapshot, run.stderr).toBeGreaterThanOrEqual(0);
    expect(failedRestore, run.stderr).toBeGreaterThan(failedSnapshot);
    expect(lines.slice(failedRestore).some((l) => /restored from checkpoint \d+/.test(l)), run.stderr).toBe(true);
    expectExactOutput(dirs.output, reference, run.stderr);
  });
});
