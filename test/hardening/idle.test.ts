// Issue 11 items 5 and 12, as a user meets them: `sluice run` child processes reading Kinesis (kinesalite, behind
// a proxy that makes one shard slow to deliver its first records) into JSONL part files.
//  - A slow shard is not an idle one: however long its first records take, none is dropped as late, and the
//    output equals a plain-loop reference (before the fix, the slow shard went idle after the idleness timeout, the
//    watermark ran ahead and its records were dropped while the job printed "finished" and exited 0).
//  - Late records that are dropped are reported: a warning while running, the REST API's job details, and the
//    final summary line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { committedLines, expectExactOutput, generateInput, referenceTotals, runChild, startChild, type InputSpec } from '../crash/crash-harness.ts';
import { restUrl, waitFor } from '../integration/sluice-process.ts';
import { createStream, putRecords, startKinesisEmulator, type KinesisEmulator } from '../harness/aws/kinesis-emulator.ts';
import { startSlowKinesisProxy, type SlowKinesisProxy } from '../harness/aws/slow-kinesis-proxy.ts';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';

const JOB = 'test/fixtures/jobs/kinesis-window-totals.ts';
const SPEC: InputSpec = { records: 2000, accounts: 20, t0: 1_700_000_000_000, stepMs: 3, maxDelayMs: 2000, windowMs: 5000, malformedAfter: [] };

const READ = SPEC.records.toLocaleString('en-US');

let emu: KinesisEmulator;
let client: KinesisClient;
const dir = mkdtempSync(join(tmpdir(), 'sluice-idle-'));
const input = generateInput(SPEC, 5);
const reference = referenceTotals(input.records, SPEC.windowMs);
let streams = 0;

beforeAll(async () => {
  emu = await startKinesisEmulator();
  client = new KinesisClient({ ...emu.clientConfig, requestHandler: new NodeHttpHandler() });
}, 60_000);

afterAll(async () => {
  client?.destroy();
  await emu?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A new stream with `shards` shards holding the input, partition key = account. Returns its name and the shards used. */
async function feed(shards: number): Promise<{ stream: string; shardIds: string[] }> {
  const stream = `transactions-${++streams}`;
  await createStream(client, stream, shards);
  const placed = await putRecords(client, stream, input.records.map((t) => ({ key: t.account, data: t })));
  return { stream, shardIds: [...new Set(placed.map((p) => p.shardId))].sort() };
}

function env(endpoint: string): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_KINESIS: endpoint,
    AWS_REGION: emu.clientConfig.region,
    AWS_ACCESS_KEY_ID: emu.clientConfig.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: emu.clientConfig.credentials.secretAccessKey,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

describe('sluice run: a slow Kinesis shard is not an idle one', () => {
  it.each([1, 2])('parallelism %i: one shard answers only long after the idleness timeout; every window is exact', async (parallelism) => {
    const { stream, shardIds } = await feed(2);
    expect(shardIds).toHaveLength(2);
    let proxy: SlowKinesisProxy | undefined;
    try {
      // Held until the other shard is read to its tip, or 5 s, far past the 300 ms idleness timeout. Watermark
      // alignment usually keeps the fast shard from its tip meanwhile (an unanswered shard holds the group back), so
      // the 5 s bound is what ends the hold: without it the test would wait for the proxy's 60 s safety net.
      proxy = await startSlowKinesisProxy(emu.endpoint, shardIds[1]!, 5_000);
      const output = join(dir, `slow-${parallelism}`);
      const run = await runChild(
        [
          'run', JOB,
          '--stream', stream,
          '--output', output,
          '--parallelism', String(parallelism),
          '--max-delay-ms', String(SPEC.maxDelayMs),
          '--window-ms', String(SPEC.windowMs),
          '--idle-ms', '300',
          // The fast shard takes many calls (5 per second) to reach its tip: far longer than the idleness timeout.
          '--records-per-call', '100',
          '--stop-when-idle-ms', '1000',
        ],
        { env: env(proxy.endpoint) },
      );
      expect(proxy.released(), 'the slow shard was held past the idleness timeout').toBe(true);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(`sluice: job "kinesis-window-totals" finished: ${READ} records read in `);
      expect(run.stderr).not.toContain('late record');
      expectExactOutput(output, reference, run.stderr);
    } finally {
      await proxy?.stop();
    }
  }, 120_000);
});

describe('sluice run: dropped late records are reported', () => {
  it('warns while running, shows the count in the REST API, and prints it in the summary line', async () => {
    // One shard read in put order with no allowed out-of-orderness: the input's jitter makes records late.
    const { stream } = await feed(1);
    const output = join(dir, 'late');
    const checkpoints = join(dir, 'late-checkpoints');
    const job = startChild(
      [
        'run', JOB,
        '--stream', stream,
        '--output', output,
        '--checkpoint-dir', checkpoints,
        '--checkpoint-interval-ms', '200',
        '--max-delay-ms', '0',
        '--window-ms', '100',
      ],
      env(emu.endpoint),
    );
    try {
      // The job reads forever (no --stop-when-idle-ms): wait until it has read everything and dropped late records.
      const url = await waitFor('the REST API', () => restUrl(checkpoints), 60_000);
      const details = await waitFor(
        'every record read and late records dropped',
        async () => {
          const jobs = (await (await fetch(`${url}/jobs`)).json()) as { jobs: { id: string }[] };
          const d = (await (await fetch(`${url}/jobs/${jobs.jobs[0]!.id}`)).json()) as { id: string; recordsRead: number; droppedLateRecords: number };
          return d.recordsRead === SPEC.records && d.droppedLateRecords > 0 ? d : undefined;
        },
        60_000,
      );
      const stopped = await fetch(`${url}/jobs/${details.id}/stop`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(stopped.status).toBe(200);
      const run = await job.done;
      expect(run.code, run.stderr).toBe(0);
      const summary = new RegExp(
        `stopped with savepoint .*: ${READ} records read in [\\d.]+ s \\([\\d,]+ events/s\\); ([\\d,]+) late records? dropped \\(behind the watermark, no late-data output\\)`,
      ).exec(run.stderr);
      expect(summary, run.stderr).not.toBeNull();
      const dropped = Number(summary![1]!.replaceAll(',', ''));
      expect(dropped).toBeGreaterThanOrEqual(details.droppedLateRecords);
      expect(run.stderr).toMatch(/warning: task "[^"]+" \(subtask 0\) dropped \d+ late records?: its event time was behind the watermark/);
      // What was dropped is exactly what is missing from the windows that fired.
      const counted = committedLines(output).reduce((n, l) => n + (JSON.parse(l) as { count: number }).count, 0);
      expect(counted).toBeLessThanOrEqual(SPEC.records - dropped);
    } finally {
      job.kill();
    }
  }, 120_000);
});
