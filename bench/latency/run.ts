// `npm run bench:latency [-- --quick] [-- --pipelines stateless,window] [-- --seconds 30]`: end-to-end latency of
// two pipelines on the real runtime (`sluice run bench/latency/latency-job.ts` at parallelism 2, one process per
// point), with checkpoints off and every 1 s, with the memory and the RocksDB backend. For each pipeline and
// setting it first measures the pipeline's maximum throughput (the source flat out), then runs the source on a
// fixed schedule at 10 %, 50 % and 80 % of it and prints one line per point:
//   latency <pipeline> load=<pct>% checkpoints=<off|1s> backend=<memory|rocksdb>: p50=<ms> p99=<ms> p999=<ms> max=<ms>
// Prints figures only; docs are not touched.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RESULT_LINE, THROUGHPUT_LINE } from './collector.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SLUICE = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const JOB = 'bench/latency/latency-job.ts';
const PARALLELISM = 2;
const LOADS = [10, 50, 80];
/** Tumbling window of the window pipeline: 4 windows per second, so a 30 s point has ~120 closing moments. */
const WINDOW_MS = 250;

function argument(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
}

const quick = process.argv.includes('--quick');
const seconds = Number(argument('seconds') ?? (quick ? 3 : 30));
const warmupSeconds = quick ? 1 : 5;
const throughputSeconds = quick ? 2 : 10;
const pipelines = argument('pipelines')?.split(',') ?? ['stateless', 'window'];

interface Setting {
  readonly checkpoints: 'off' | '1s';
  readonly backend: 'memory' | 'rocksdb';
}
const SETTINGS: readonly Setting[] = [
  { checkpoints: 'off', backend: 'memory' },
  { checkpoints: 'off', backend: 'rocksdb' },
  { checkpoints: '1s', backend: 'memory' },
  { checkpoints: '1s', backend: 'rocksdb' },
];

/** Runs the job once in its own process, with fresh checkpoint and state folders; returns its stdout. */
function runJob(pipeline: string, setting: Setting, rate: number, measuredSeconds: number): string {
  const scratch = mkdtempSync(join(tmpdir(), 'sluice-latency-'));
  const args = [
    SLUICE, 'run', JOB,
    '--pipeline', pipeline,
    '--rate', String(rate),
    '--seconds', String(measuredSeconds),
    '--warmup-seconds', String(warmupSeconds),
    '--window-ms', String(WINDOW_MS),
    '--parallelism', String(PARALLELISM),
    '--state-backend', setting.backend,
    '--restart-strategy', 'none',
    ...(setting.backend === 'rocksdb' ? ['--state-dir', join(scratch, 'state')] : []),
    ...(setting.checkpoints === '1s' ? ['--checkpoint-dir', join(scratch, 'checkpoints'), '--checkpoint-interval-ms', '1000', '--fresh'] : []),
  ];
  try {
    const child = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 24 });
    if (child.status !== 0) throw new Error(`${pipeline} at rate ${rate} failed (exit ${child.status}):\n${child.stderr}${child.stdout}`);
    return child.stdout;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const loads: number[] = [];
let failures = 0;
/** A failed run is reported and skipped, so that one bad setting does not cost the rest of a long run. */
function attempt(what: string, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    failures++;
    console.log(`${what}: failed: ${(err as Error).message.split('\n').slice(0, 6).join(' | ')}`);
  }
}

for (const pipeline of pipelines) {
  for (const setting of SETTINGS) {
    const label = `checkpoints=${setting.checkpoints} backend=${setting.backend}`;
    attempt(`throughput ${pipeline} ${label}`, () => {
      loads.push(loadavg()[0] ?? 0);
      const flatOut = THROUGHPUT_LINE.exec(runJob(pipeline, setting, 0, throughputSeconds));
      if (flatOut === null) throw new Error('no throughput line');
      const max = Number(flatOut[1]);
      console.log(`throughput ${pipeline} ${label}: ${max} events/s (the 100 % of the loads below)`);
      for (const load of LOADS) {
        attempt(`latency ${pipeline} load=${load}% ${label}`, () => {
          loads.push(loadavg()[0] ?? 0);
          const stdout = runJob(pipeline, setting, Math.max(1, Math.round((max * load) / 100)), seconds);
          const m = RESULT_LINE.exec(stdout);
          if (m === null) throw new Error(`no result line in ${stdout}`);
          console.log(`latency ${pipeline} load=${load}% ${label}: p50=${m[2]} p99=${m[3]} p999=${m[4]} max=${m[5]}`);
        });
      }
    });
  }
}
console.log(`(1-minute load average before the runs: ${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}; ${seconds} s per point after ${warmupSeconds} s of warm-up)`);
if (failures > 0) process.exitCode = 1;
