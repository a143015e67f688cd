/**
 * `npm run cost:aws -- <figures.json> [--exchange-figures <figures.json>] [--workers N ...]`: prints the markdown
 * tables of docs/aws-cost.md from the quantities of a dev:cluster run (`npm run dev:cluster -- --json > run.json`;
 * `perCheckpoint`, `perMillionEvents`, `method`), the workload of issue 14 item 7 and the dated us-east-1 prices of
 * aws-prices.ts. Exit 0 after printing; 2 for bad usage or a figures file of another shape (the message names the
 * file, the key and what it needs).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError } from '../../lib/core/errors.ts';
import { US_EAST_1_PRICES } from './aws-prices.ts';
import { DEFAULT_DEPLOYMENT, DEFAULT_WORKLOAD, type Deployment } from './cost-model.ts';
import { renderCostReport } from './cost-report.ts';
import { parseDevClusterFigures, type DevClusterFigures } from './dev-cluster-figures.ts';

const USAGE =
  'usage: npm run cost:aws -- <figures.json> [--exchange-figures <figures.json>] [--workers N] [--worker-vcpu N] ' +
  '[--worker-memory-gb N] [--parallelism P] [--flink-kpus N]';

function readFigures(path: string): DevClusterFigures {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError(`${path}: cannot read the figures file (${(cause as Error).message})`, { cause });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    // `npm run dev:cluster -- --json > f` also writes npm's banner lines: take the last line that is a JSON object.
    const last = text.split('\n').filter((l) => l.trim().startsWith('{')).at(-1);
    if (last !== undefined) {
      try {
        doc = JSON.parse(last);
      } catch {
        doc = undefined;
      }
    }
  }
  if (doc === undefined) {
    throw new ConfigError(`${path}: no JSON document in it; save the output of \`npm run dev:cluster -- --json\``);
  }
  return parseDevClusterFigures(doc, path);
}

function positive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(`--${name} must be a number > 0, got ${JSON.stringify(raw)}\n${USAGE}`);
  return n;
}

function main(argv: readonly string[]): number {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        'exchange-figures': { type: 'string' },
        workers: { type: 'string' },
        'worker-vcpu': { type: 'string' },
        'worker-memory-gb': { type: 'string' },
        parallelism: { type: 'string' },
        'flink-kpus': { type: 'string' },
      },
    });
    const [figuresPath, ...extra] = positionals;
    if (figuresPath === undefined || extra.length > 0) throw new ConfigError(`expected exactly one figures file\n${USAGE}`);
    const deployment: Deployment = {
      ...DEFAULT_DEPLOYMENT,
      workers: positive('workers', values.workers, DEFAULT_DEPLOYMENT.workers),
      workerVcpu: positive('worker-vcpu', values['worker-vcpu'], DEFAULT_DEPLOYMENT.workerVcpu),
      workerMemoryGb: positive('worker-memory-gb', values['worker-memory-gb'], DEFAULT_DEPLOYMENT.workerMemoryGb),
      parallelism: positive('parallelism', values.parallelism, DEFAULT_DEPLOYMENT.parallelism),
      flinkKpus: positive('flink-kpus', values['flink-kpus'], DEFAULT_DEPLOYMENT.flinkKpus),
    };
    const exchangePath = values['exchange-figures'];
    process.stdout.write(
      renderCostReport({
        aligned: readFigures(figuresPath),
        ...(exchangePath === undefined ? {} : { exchange: readFigures(exchangePath) }),
        workload: DEFAULT_WORKLOAD,
        deployment,
        prices: US_EAST_1_PRICES,
      }),
    );
    return 0;
  } catch (error) {
    if (error instanceof ConfigError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      console.error(`cost:aws: ${(error as Error).message}`);
      return 2;
    }
    throw error;
  }
}

process.exitCode = main(process.argv.slice(2));
