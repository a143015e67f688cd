import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineJob, type JobDefinition } from '../../../lib/api/job.ts';
import { ExitCode } from '../../../lib/cli/exit-codes.ts';
import { runCli, type CliDeps } from '../../../lib/cli/run-cli.ts';
import { ConfigError, JobFailedError, UserFunctionError } from '../../../lib/core/index.ts';
import type { JobResult } from '../../../lib/runtime/job-result.ts';
import type { ThreadedRunOptions } from '../../../lib/runtime/threads/thread-runner.ts';

const job = defineJob({
  name: 'totals',
  description: 'sums things',
  flags: {
    input: { type: 'string', required: true, description: 'input file' },
    windowMs: { type: 'number', integer: true, min: 1, default: 10000, description: 'window size' },
    dryRun: { type: 'boolean', description: 'do nothing' },
  },
  build() {},
});

interface Harness {
  deps: CliDeps;
  out: string[];
  err: string[];
  runs: ThreadedRunOptions[];
  loaded: string[];
}

function harness(options: { job?: JobDefinition; loadError?: unknown; runError?: unknown; processors?: number } = {}): Harness {
  const h: Harness = { out: [], err: [], runs: [], loaded: [], deps: undefined as unknown as CliDeps };
  h.deps = {
    version: '9.9.9',
    loadJob: async (path) => {
      h.loaded.push(path);
      if (options.loadError !== undefined) throw options.loadError;
      return (options.job ?? job) as JobDefinition;
    },
    runJob: async (run): Promise<JobResult> => {
      h.runs.push(run);
      if (options.runError !== undefined) throw options.runError;
      return { durationMs: 1000, sourceRecords: 5000, droppedLateRecords: 0, tasks: [] };
    },
    stdout: (t) => void h.out.push(t),
    stderr: (t) => void h.err.push(t),
    // Fixed, so that what is printed does not depend on the machine the tests run on.
    availableParallelism: () => options.processors ?? 4,
  };
  return h;
}

const text = (chunks: string[]) => chunks.join('');

describe('sluice run', () => {
  it('exits 2 before running when a checkpoint, savepoint or state folder is a file or cannot be created', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-dirs-'));
    try {
      const file = join(dir, 'a-file');
      writeFileSync(file, 'x');
      const cases: [string[], RegExp][] = [
        [['--checkpoint-dir', file], /^error: --checkpoint-dir .*a-file is a file, not a directory/],
        [['--checkpoint-dir', join(dir, 'ck'), '--savepoint-dir', join(file, 'sp')], /^error: --savepoint-dir .*a-file\/sp cannot be used: ENOTDIR/],
        [['--state-backend', 'rocksdb', '--state-dir', file], /^error: --state-dir .*a-file is a file, not a directory/],
      ];
      for (const [flags, message] of cases) {
        const h = harness();
        const code = await runCli(['run', 'jobs/totals.ts', '--input', 'in.jsonl', ...flags], h.deps);
        expect(code).toBe(ExitCode.usage);
        expect(text(h.err)).toMatch(message);
        expect(text(h.err)).not.toContain('--help');
        expect(h.runs).toHaveLength(0);
      }
      expect(readdirSync(dir)).toEqual(['a-file']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs the job with typed flags and job options, then prints the summary', async () => {
    const h = harness();
    const code = await runCli(['run', 'jobs/totals.ts', '--input', 'in.jsonl', '--window-ms', '500', '--dry-run', '--parallelism', '3'], h.deps);
    expect(code).toBe(ExitCode.ok);
    expect(h.loaded).toEqual(['jobs/totals.ts']);
    expect(h.runs).toHaveLength(1);
    expect(h.runs[0]?.modulePath).toMatch(/\/jobs\/totals\.ts$/);
    expect(h.runs[0]?.flags).toEqual({ input: 'in.jsonl', windowMs: 500, dryRun: true });
    expect(h.runs[0]?.jobOptions).toEqual({ parallelism: 3, maxParallelism: 128 });
    expect(text(h.err)).toBe('sluice: job "totals" finished: 5,000 records read in 1.00 s (5,000 events/s)\n');
  });

  it('warns once, and still runs, when --threads is above the processors the machine offers', async () => {
    const h = harness({ processors: 2 });
    expect(await runCli(['run', 'jobs/totals.ts', '--input', 'x', '--parallelism', '3', '--threads', '3'], h.deps)).toBe(ExitCode.ok);
    expect(h.runs).toHaveLength(1);
    expect(h.runs[0]?.threads).toBe(3);
    const warnings = text(h.err).split('\n').filter((l) => l.startsWith('warning:'));
    expect(warnings).toEqual([
      'warning: --threads 3 is more than the 2 processors this machine offers: the threads take turns on them: the job runs, but CPU-bound work gets no faster than with --threads 2',
    ]);
    const atCores = harness({ processors: 2 });
    expect(await runCli(['run', 'jobs/totals.ts', '--input', 'x', '--parallelism', '3', '--threads', '2'], atCores.deps)).toBe(ExitCode.ok);
    expect(text(atCores.err)).not.toContain('warning:');
  });

  it('does not warn when --parallelism alone is above the processors: subtasks share the default threads', async () => {
    const h = harness({ processors: 2 });
    expect(await runCli(['run', 'jobs/totals.ts', '--input', 'x', '--parallelism', '100'], h.deps)).toBe(ExitCode.ok);
    expect(h.runs).toHaveLength(1);
    expect(h.runs[0]?.threads).toBeUndefined();
    expect(text(h.err)).not.toContain('warning:');
    // Threads beyond the parallelism would have nothing to run: they are not counted against the processors.
    const clamped = harness({ processors: 2 });
    expect(await runCli(['run', 'jobs/totals.ts', '--input', 'x', '--parallelism', '2', '--threads', '8'], clamped.deps)).toBe(ExitCode.ok);
    expect(text(clamped.err)).not.toContain('warning:');
  });

  it('exits 2 before running on a --threads that is not a positive integer', async () => {
    for (const bad of ['0', '-1', '1.5', 'two']) {
      const h = harness();
      expect(await runCli(['run', 'jobs/totals.ts', '--input', 'x', '--threads', bad], h.deps)).toBe(ExitCode.usage);
      expect(text(h.err)).toMatch(/--threads/);
      expect(h.runs).toHaveLength(0);
    }
  });

  it('accepts --flag=value and common flags before the job', async () => {
    const h = harness();
    expect(await runCli(['run', '--parallelism', '2', 'jobs/totals.ts', '--input=x', '--max-parallelism=64'], h.deps)).toBe(ExitCode.ok);
    expect(h.runs[0]?.jobOptions).toEqual({ parallelism: 2, maxParallelism: 64 });
    expect(h.runs[0]?.flags).toMatchObject({ input: 'x', windowMs: 10000, dryRun: false });
  });

  it('lists common and job flags with descriptions and defaults for run <job> --help', async () => {
    const h = harness();
    expect(await runCli(['run', 'jobs/totals.ts', '--help'], h.deps)).toBe(ExitCode.ok);
    const help = text(h.out);
    expect(help).toContain('Run job "totals": sums things');
    expect(help).toContain('Common flags:');
    expect(help).toMatch(/--parallelism <number>\s+subtasks per operator/);
    expect(help).toContain('Job flags (totals):');
    expect(help).toMatch(/--input <value>\s+input file \(required\)/);
    expect(help).toMatch(/--window-ms <number>\s+window size \(integer >= 1; default: 10000\)/);
    expect(help).toMatch(/--dry-run\s+do nothing/);
    expect(h.runs).toHaveLength(0);
  });

  it('lists the commands for sluice --help, and prints the version', async () => {
    const h = harness();
    expect(await runCli(['--help'], h.deps)).toBe(ExitCode.ok);
    expect(text(h.out)).toMatch(/run \[options\] <job>\s+run a job module on worker threads/);
    const v = harness();
    expect(await runCli(['--version'], v.deps)).toBe(ExitCode.ok);
    expect(text(v.out)).toBe('9.9.9\n');
  });

  it('exits 2 with a message for an unknown flag', async () => {
    const h = harness();
    expect(await runCli(['run', 'jobs/totals.ts', '--input', 'x', '--windw-ms', '5'], h.deps)).toBe(ExitCode.usage);
    expect(text(h.err)).toMatch(/error: unknown option '--windw-ms'/);
    expect(text(h.err)).toContain('(run "sluice run jobs/totals.ts --help" to list the flags)');
    expect(h.runs).toHaveLength(0);
  });

  it('exits 2 naming the flag, the expectation and the value for a bad number', async () => {
    const h = harness();
    expect(await runCli(['run', 'jobs/totals.ts', '--input', 'x', '--window-ms', 'abc'], h.deps)).toBe(ExitCode.usage);
    expect(text(h.err)).toContain('error: --window-ms must be an integer >= 1, got "abc"\n');
    expect(text(h.err)).toContain('(run "sluice run jobs/totals.ts --help" to list the flags)');
  });

  it('exits 2 for a missing required flag and for bad common flags', async () => {
    const h = harness();
    expect(await runCli(['run', 'jobs/totals.ts'], h.deps)).toBe(ExitCode.usage);
    expect(text(h.err)).toContain('error: missing required flag --input (input file)');
    const p = harness();
    expect(await runCli(['run', 'jobs/totals.ts', '--input', 'x', '--parallelism', '0'], p.deps)).toBe(ExitCode.usage);
    expect(text(p.err)).toContain('error: --parallelism must be an integer >= 1, got "0"');
    const big = harness();
    expect(await runCli(['run', 'jobs/totals.ts', '--input', 'x', '--parallelism', '5000'], big.deps)).toBe(ExitCode.usage);
    expect(text(big.err)).toMatch(/error: parallelism must be an integer between 1 and 1024, got 5000 \(set by --parallelism/);
  });

  it('exits 2 when the job module cannot be loaded or is not a job', async () => {
    const missing = harness({ loadError: new ConfigError('job module not found: /x/nope.ts; pass the path of a .ts or .js file') });
    expect(await runCli(['run', 'nope.ts'], missing.deps)).toBe(ExitCode.usage);
    expect(text(missing.err)).toBe('error: job module not found: /x/nope.ts; pass the path of a .ts or .js file\n');
    const broken = harness({ loadError: new SyntaxError('Unexpected token') });
    expect(await runCli(['run', 'broken.ts'], broken.deps)).toBe(ExitCode.usage);
    expect(text(broken.err)).toBe('error: cannot load job module broken.ts: Unexpected token\n');
  });

  it('exits 2 when the job declares invalid flags', async () => {
    const bad = defineJob({ name: 'bad', flags: { parallelism: { type: 'number', description: 'clash' } }, build() {} });
    const h = harness({ job: bad as JobDefinition });
    expect(await runCli(['run', 'bad.ts'], h.deps)).toBe(ExitCode.usage);
    expect(text(h.err)).toContain('--parallelism is a common flag');
  });

  it('exits 2 without a job or a command', async () => {
    const h = harness();
    expect(await runCli(['run'], h.deps)).toBe(ExitCode.usage);
    expect(text(h.err)).toContain("missing required argument 'job'");
    expect(await runCli([], harness().deps)).toBe(ExitCode.usage);
    expect(await runCli(['walk'], harness().deps)).toBe(ExitCode.usage);
  });

  it('exits 2 for a configuration error raised while building the job', async () => {
    const h = harness({ runError: new ConfigError('JSONL source: input path "in.jsonl" does not exist or cannot be read') });
    expect(await runCli(['run', 'jobs/totals.ts', '--input', 'in.jsonl'], h.deps)).toBe(ExitCode.usage);
    expect(text(h.err)).toBe('error: JSONL source: input path "in.jsonl" does not exist or cannot be read\n');
  });

  it('exits 1 and names operator, subtask, origin and cause when a user function throws', async () => {
    const cause = new UserFunctionError('explode', 0, { split: 'in.jsonl#0', offset: 77 }, new Error('no good'));
    const h = harness({ runError: new JobFailedError('job failed: ...', cause) });
    expect(await runCli(['run', 'jobs/totals.ts', '--input', 'in.jsonl'], h.deps)).toBe(ExitCode.jobFailed);
    expect(text(h.err)).toBe(
      [
        'error: job "totals" failed: a user function threw',
        '  operator: explode (subtask 0)',
        '  record:   split in.jsonl#0 offset 77',
        '  cause:    no good',
        '',
      ].join('\n'),
    );
  });
});

describe('sluice run flag problems', () => {
  it('reports bad common flags and bad job flags together', async () => {
    const h = harness();
    expect(await runCli(['run', 'jobs/totals.ts', '--parallelism', 'two', '--window-ms', '0'], h.deps)).toBe(ExitCode.usage);
    expect(text(h.err)).toBe(
      [
        'error: --parallelism must be an integer >= 1, got "two"',
        'error: missing required flag --input (input file)',
        'error: --window-ms must be an integer >= 1, got "0"',
        '(run "sluice run jobs/totals.ts --help" to list the flags)',
        '',
      ].join('\n'),
    );
    expect(h.runs).toHaveLength(0);
  });
});
