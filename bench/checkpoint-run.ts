// One measurement of bench/checkpoints.ts in a process of its own: large state needs the memory, and a restart must
// start from nothing. Usage: tsx bench/checkpoint-run.ts '<json RunSpec>'
// Reports on stderr, each line prefixed with its epoch ms: `<ms> LOG <runner line>` while a job runs, then
// `<ms> DONE <json>` with the process's peak RSS (and, for `encode`, the timings).
import { readFileSync, writeSync } from 'node:fs';
import { runOnThreads } from 'sluice';
import { decodeTaskSnapshot, encodeTaskSnapshot } from '../lib/storage/task-state-codec.ts';

export type RunSpec =
  /** Runs a job module as `sluice run` does (worker threads), checkpointing into `dir`, with no restarts. */
  | {
      readonly kind: 'job';
      readonly modulePath: string;
      readonly flags: Record<string, unknown>;
      readonly parallelism: number;
      readonly dir: string;
      readonly intervalMs: number;
      /** Complete checkpoints to keep. */
      readonly retain: number;
    }
  /**
   * Decodes a task state file, then times encoding it again: the part of the asynchronous phase that occupies the
   * task's thread. Once without a size hint, then `repeat` times with the file's size as the hint.
   */
  | { readonly kind: 'encode'; readonly path: string; readonly repeat: number };

const spec = JSON.parse(process.argv[2] ?? '') as RunSpec;
const say = (line: string): void => {
  writeSync(2, `${Date.now()} ${line}\n`);
};
const peakRssMb = (): number => Math.round(process.resourceUsage().maxRSS / 1024);

if (spec.kind === 'job') {
  await runOnThreads({
    modulePath: spec.modulePath,
    flags: spec.flags,
    jobOptions: { parallelism: spec.parallelism },
    checkpointing: { dir: spec.dir, intervalMs: spec.intervalMs, retain: spec.retain },
    restart: { kind: 'none' },
    log: (line) => say(`LOG ${line}`),
  });
  say(`DONE ${JSON.stringify({ peakRssMb: peakRssMb() })}`);
} else {
  const file = readFileSync(spec.path);
  const snapshot = decodeTaskSnapshot(file, spec.path);
  const time = (sizeHint: number | undefined): number => {
    const started = performance.now();
    encodeTaskSnapshot(snapshot, { sizeHint });
    return performance.now() - started;
  };
  // Without a hint, as for a task's first checkpoint; then with the previous size, as for every later one.
  const unhintedMs = time(undefined);
  const hintedMs = Array.from({ length: spec.repeat }, () => time(file.byteLength));
  say(`DONE ${JSON.stringify({ peakRssMb: peakRssMb(), unhintedMs, hintedMs })}`);
}
