// `npm run dev:cluster -- --json` counts what the cost model needs: a short run with a SIGKILL and a state dir per
// worker must report every per-checkpoint and per-million-event key, non-zero where this job makes such calls, and a
// failover split into detection and a restore that cannot be local (no shared state dir). Counts, not timings.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));
const DEV_CLUSTER = fileURLToPath(new URL('../../scripts/cluster/dev-cluster.ts', import.meta.url));
const KEYS = ['stateTransitions', 'handlerCalls', 'handlerMs', 'dynamodbReadUnits', 'dynamodbWriteUnits', 's3ClassA', 's3ClassB', 'kinesisGetRecords', 'kinesisPutRecords', 'stateDirBytesWritten'];

let running: ChildProcess | undefined;

// A timed-out run must not leave dev:cluster (and its emulators and workers) behind: SIGTERM ends it, which stops them.
afterAll(() => {
  if (running !== undefined && running.exitCode === null && running.signalCode === null) running.kill('SIGTERM');
});

function devCluster(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // The harness's namespace is inherited (SLUICE_TEST_NETNS=1): dev:cluster runs in place.
    const child = spawn(process.execPath, [TSX, DEV_CLUSTER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    running = child;
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('dev:cluster --json figures', () => {
  it('counts Step Functions, DynamoDB, S3, Kinesis and state dir bytes per checkpoint and per million events', async () => {
    const run = await devCluster(['--records', '2000', '--kill-after-ms', '500', '--state-dir-per-worker', '--json', '--timeout-ms', '45000']);
    const line = run.stdout.trim().split('\n').pop() ?? '';
    expect(run.code, `dev:cluster exited ${run.code}: ${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`).toBe(0);
    const doc = JSON.parse(line) as Record<string, Record<string, unknown>> & { ok: boolean };
    expect(doc.ok).toBe(true);
    for (const part of ['perCheckpoint', 'perMillionEvents'] as const) {
      expect(Object.keys(doc[part]!).sort()).toEqual([...KEYS, 'method'].sort());
      for (const key of KEYS) expect(typeof doc[part]![key], `${part}.${key}`).toBe('number');
    }
    const perCheckpoint = doc['perCheckpoint'] as Record<string, number>;
    for (const key of ['stateTransitions', 'handlerCalls', 'handlerMs', 'dynamodbReadUnits', 'dynamodbWriteUnits', 's3ClassA', 's3ClassB']) {
      expect(perCheckpoint[key], `perCheckpoint.${key}`).toBeGreaterThan(0);
    }
    const perMillion = doc['perMillionEvents'] as Record<string, number>;
    for (const key of ['dynamodbWriteUnits', 'kinesisGetRecords', 'stateDirBytesWritten']) expect(perMillion[key], `perMillionEvents.${key}`).toBeGreaterThan(0);
    // The aligned job puts nothing to Kinesis (no exchange): the proxy saw the feeding, which is not counted.
    expect(perMillion['kinesisPutRecords']).toBe(0);
    expect(typeof doc['method']).toBe('string');
    const window = doc['window'] as { checkpoints: number; events: number };
    expect(window.checkpoints).toBeGreaterThan(0);
    expect(window.events).toBe(2000);
    // Transactions (acks, takes, sink commits) are counted from their requests: DynamoDB Local under-reports them.
    expect((doc['calls'] as { dynamodb: { computedCalls: number } }).dynamodb.computedCalls).toBeGreaterThan(0);
    const failover = doc['failover'] as { detectMs: number; restoreMs: number; restore: string; stateDirPerWorker: boolean };
    expect(failover.detectMs).toBeGreaterThan(0);
    expect(failover.restoreMs).toBeGreaterThanOrEqual(0);
    // No shared state dir: the survivor cannot reuse the victim's databases.
    expect(['s3', 'fresh']).toContain(failover.restore);
    expect(failover.stateDirPerWorker).toBe(true);
  }, 85_000);
});
