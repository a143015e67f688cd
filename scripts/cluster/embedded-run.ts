// The cluster job run embedded, for `dev:cluster --embedded`: `sluice run` of the same job file on the same
// emulators (a stream, sink table and checkpoint folder of its own), the same parallelism, checkpoint interval and
// state backend (RocksDB), fed the same records the same way. Its checkpoint durations come from its REST API
// (`durationMs` of GET /jobs/:id/checkpoints, polled: the API keeps the last 20).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureTable } from '../../lib/connectors/aws/dynamodb/ensure-table.ts';
import { BUCKET } from '../../test/harness/aws/example-stack.ts';
import { createStream } from '../../test/harness/aws/kinesis-emulator.ts';
import { JOB_PATH, LocalClusterError, tableDifferences, waitUntil, type LocalCluster, type Totals, type Transaction } from './local-cluster.ts';

const SLUICE = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const STREAM = 'transactions-embedded';
const TABLE = 'account-totals-embedded';

export interface EmbeddedRunOptions {
  readonly parallelism: number;
  readonly shards: number;
  readonly checkpointIntervalMs: number;
  readonly timeoutMs: number;
}

export interface EmbeddedRun {
  readonly tableEqualsReference: boolean;
  /** Workers' start (here: `sluice run`'s REST API up) to the table equal to the reference. */
  readonly convergedMs: number;
  /** `durationMs` of every completed checkpoint (savepoints excluded). */
  readonly checkpointDurations: number[];
  readonly stopCode: number | null;
}

interface RestCheckpoint {
  readonly id: number;
  readonly status: string;
  readonly savepoint: boolean;
  readonly durationMs: number | null;
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new LocalClusterError(`GET ${url}: ${res.status}`);
  return (await res.json()) as T;
}

export async function runEmbedded(cluster: LocalCluster, input: readonly Transaction[], reference: ReadonlyMap<string, Totals>, options: EmbeddedRunOptions): Promise<EmbeddedRun> {
  const client = cluster.stack.dynamodb.client;
  await Promise.all([
    createStream(cluster.stack.kinesisClient, STREAM, options.shards),
    ensureTable({ tableName: TABLE, partitionKey: { name: 'account', type: 'S' }, client }),
    ensureTable({ tableName: `${TABLE}-markers`, partitionKey: { name: 'pk', type: 'S' }, client }),
  ]);
  const half = Math.floor(input.length / 2);
  await cluster.feed(input.slice(0, half), STREAM);
  const stateDir = mkdtempSync(join(tmpdir(), 'sluice-embedded-'));
  const args = [
    SLUICE, 'run', JOB_PATH,
    '--parallelism', String(options.parallelism),
    '--checkpoint-dir', `s3://${BUCKET}/embedded`,
    '--checkpoint-interval-ms', String(options.checkpointIntervalMs),
    '--state-backend', 'rocksdb',
    '--state-dir', stateDir,
    '--rest-port', '0',
    '--stream', STREAM,
    '--table', TABLE,
  ];
  const child = spawn(process.execPath, args, { env: { ...process.env, ...cluster.stack.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const seen = new Map<number, RestCheckpoint>();
  let poller: NodeJS.Timeout | undefined;
  try {
    let url = '';
    await waitUntil('sluice run to announce its REST API', () => {
      const m = /REST API on (http:\/\/\S+)/.exec(output);
      if (m?.[1] !== undefined) url = m[1];
      if (child.exitCode !== null) throw new LocalClusterError(`sluice run exited with ${child.exitCode}: ${output.slice(-2000)}`);
      return url !== '';
    }, 120_000);
    const jobs = await getJson<{ jobs: Array<{ id: string }> }>(`${url}/jobs`);
    const jobId = jobs.jobs[0]?.id;
    if (jobId === undefined) throw new LocalClusterError(`sluice run: no job at ${url}/jobs`);
    const started = Date.now();
    const poll = async (): Promise<void> => {
      const { checkpoints } = await getJson<{ checkpoints: RestCheckpoint[] }>(`${url}/jobs/${jobId}/checkpoints`);
      for (const c of checkpoints) if (c.status === 'completed') seen.set(c.id, c);
    };
    const tick = (): void => {
      poll().catch(() => undefined).finally(() => {
        if (poller !== undefined) poller = setTimeout(tick, 1000);
      });
    };
    poller = setTimeout(tick, 1000);
    await cluster.feed(input.slice(half), STREAM);
    const equal = await waitUntil('the embedded table to equal the reference', async () => tableDifferences(reference, await cluster.table(TABLE)).length === 0, options.timeoutMs, 500).then(
      () => true,
      () => false,
    );
    const convergedMs = Date.now() - started;
    clearTimeout(poller);
    poller = undefined;
    await poll();
    await fetch(`${url}/jobs/${jobId}/stop`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).catch(() => undefined);
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const stopCode = await exited;
    clearTimeout(killer);
    const durations = [...seen.values()].filter((c) => !c.savepoint && c.durationMs !== null).map((c) => c.durationMs as number);
    return { tableEqualsReference: equal, convergedMs, checkpointDurations: durations, stopCode };
  } finally {
    clearTimeout(poller);
    poller = undefined;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(stateDir, { recursive: true, force: true });
  }
}
