/**
 * `npm run figures:cluster`: the figures of docs/cluster.md "## Figures". Runs `npm run dev:cluster -- --json` a few
 * times in three configurations (no kill with the embedded comparison; SIGKILL with the shared state dir; SIGKILL
 * with a state dir per worker, which forces restores from S3) and prints markdown tables of the medians. With
 * `--from DIR` it reads the JSON documents a previous `--out DIR` saved instead of running.
 *
 *   npm run figures:cluster [-- --runs 3 --only steady,kill-shared --out DIR | --from DIR] [-- <dev:cluster flags, e.g. --workers 3>]
 *
 * Exit 0 when every run's table equalled its reference; 1 otherwise; 2 for bad usage.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { CostQuantities } from './cost-figures.ts';

const USAGE = 'usage: npm run figures:cluster [-- --runs N --only CONFIG,... --out DIR | --from DIR] [-- dev:cluster flags]';
const DEV_CLUSTER = fileURLToPath(new URL('./dev-cluster.ts', import.meta.url));
const DEFAULT_FLAGS = ['--workers', '3', '--parallelism', '4', '--shards', '4', '--records', '20000'];

export const CONFIGS: Readonly<Record<string, readonly string[]>> = {
  steady: ['--embedded'],
  // 8 s: past the start-up handoffs, so that a checkpoint has completed and the survivor restores from it, not fresh.
  'kill-shared': ['--kill-after-ms', '8000'],
  'kill-per-worker': ['--kill-after-ms', '8000', '--state-dir-per-worker'],
};

/** The parts of a dev:cluster --json document these tables read. */
export interface RunDocument {
  readonly ok: boolean;
  readonly config?: string;
  readonly load?: number[];
  readonly checkpointsCompleted: number;
  readonly checkpointsAborted: number;
  readonly checkpointMs: { p50?: number; p95?: number };
  readonly embedded?: { checkpointMs: { p50?: number; p95?: number } };
  readonly failover?: { ms?: number; detectMs?: number; restoreMs?: number; restore?: string };
  readonly perCheckpoint: CostQuantities;
  readonly perMillionEvents: CostQuantities;
}

export function median(values: readonly (number | undefined)[]): number | undefined {
  const v = values.filter((x): x is number => typeof x === 'number').sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? v[mid] : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
}

function fmt(n: number | undefined, digits = 0): string {
  if (n === undefined) return '-';
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

const QUANTITY_KEYS: readonly (keyof CostQuantities)[] = [
  'stateTransitions',
  'handlerCalls',
  'handlerMs',
  'dynamodbReadUnits',
  'dynamodbWriteUnits',
  's3ClassA',
  's3ClassB',
  'kinesisGetRecords',
  'kinesisPutRecords',
  'stateDirBytesWritten',
];

/** The markdown tables: timings per configuration, and the cost quantities of the steady runs. */
export function figuresTables(byConfig: ReadonlyMap<string, readonly RunDocument[]>): string {
  const lines = [
    '| configuration | runs (ok) | load | checkpoints completed (aborted) | checkpoint p50 / p95 | embedded p50 / p95 | failover total (ms) | detect, lease (ms) | restore (ms) | restored from |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  // Medians of the runs whose table converged: a run that failed is counted in `runs`, not in the figures.
  for (const [config, all] of byConfig) {
    const runs = all.filter((r) => r.ok);
    const m = (f: (r: RunDocument) => number | undefined): number | undefined => median(runs.map(f));
    const restored = [...new Set(runs.map((r) => r.failover?.restore).filter((x) => x !== undefined))].join(', ');
    lines.push(
      `| ${config} | ${all.length} (${runs.length}) | ${fmt(m((r) => r.load?.[0]), 1)} | ${fmt(m((r) => r.checkpointsCompleted))} (${fmt(m((r) => r.checkpointsAborted))}) | ` +
        `${fmt(m((r) => r.checkpointMs.p50))} / ${fmt(m((r) => r.checkpointMs.p95))} ms | ` +
        `${runs.some((r) => r.embedded) ? `${fmt(m((r) => r.embedded?.checkpointMs.p50))} / ${fmt(m((r) => r.embedded?.checkpointMs.p95))} ms` : '-'} | ` +
        `${fmt(m((r) => r.failover?.ms))} | ${fmt(m((r) => r.failover?.detectMs))} | ${fmt(m((r) => r.failover?.restoreMs))} | ${restored || '-'} |`,
    );
  }
  const steady = (byConfig.get('steady') ?? [...byConfig.values()][0] ?? []).filter((r) => r.ok);
  lines.push('', `Cost quantities (medians of the ${steady.length} steady runs):`, '', '| quantity | per checkpoint | per million events |', '|---|---|---|');
  for (const key of QUANTITY_KEYS) {
    lines.push(`| ${key} | ${fmt(median(steady.map((r) => r.perCheckpoint[key])), 2)} | ${fmt(median(steady.map((r) => r.perMillionEvents[key])), 1)} |`);
  }
  return lines.join('\n');
}

function main(): number {
  const { values, positionals } = parseArgs({
    options: { runs: { type: 'string', default: '3' }, only: { type: 'string' }, out: { type: 'string' }, from: { type: 'string' } },
    allowPositionals: true,
  });
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) {
    console.error(`figures:cluster: --runs must be an integer >= 1, got ${JSON.stringify(values.runs)}\n${USAGE}`);
    return 2;
  }
  const only = values.only?.split(',') ?? Object.keys(CONFIGS);
  const unknown = only.filter((c) => CONFIGS[c] === undefined);
  if (unknown.length > 0) {
    console.error(`figures:cluster: --only names no configuration ${unknown.join(', ')} (one of ${Object.keys(CONFIGS).join(', ')})\n${USAGE}`);
    return 2;
  }
  const byConfig = new Map<string, RunDocument[]>();
  if (values.from !== undefined) {
    for (const file of readdirSync(values.from).filter((f) => f.endsWith('.json')).sort()) {
      const doc = JSON.parse(readFileSync(join(values.from, file), 'utf8')) as RunDocument;
      const config = doc.config ?? file.replace(/-\d+\.json$/, '');
      byConfig.set(config, [...(byConfig.get(config) ?? []), doc]);
    }
  } else {
    const flags = positionals.length > 0 ? positionals : DEFAULT_FLAGS;
    if (values.out !== undefined) mkdirSync(values.out, { recursive: true });
    for (let i = 1; i <= runs; i++) {
      for (const [config, extra] of Object.entries(CONFIGS).filter(([c]) => only.includes(c))) {
        const load = loadavg();
        console.error(`run ${i}/${runs} ${config}: dev:cluster ${[...flags, ...extra].join(' ')} (load ${load.map((l) => l.toFixed(1)).join(' ')})`);
        const result = spawnSync(process.execPath, ['--import', 'tsx', DEV_CLUSTER, ...flags, ...extra, '--json'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
        const line = result.stdout.trim().split('\n').pop() ?? '';
        let doc: RunDocument;
        try {
          doc = { ...(JSON.parse(line) as RunDocument), config, load };
        } catch {
          console.error(`run ${i} ${config}: no JSON (exit ${result.status}): ${result.stderr.slice(-2000)}`);
          continue;
        }
        if (values.out !== undefined) writeFileSync(join(values.out, `${config}-${Date.now()}.json`), `${JSON.stringify(doc)}\n`);
        byConfig.set(config, [...(byConfig.get(config) ?? []), doc]);
      }
    }
  }
  console.log(figuresTables(byConfig));
  return [...byConfig.values()].flat().every((r) => r.ok) ? 0 : 1;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main();
