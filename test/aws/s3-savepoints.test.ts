import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineJob } from '../../lib/api/job.ts';
import { ExitCode } from '../../lib/cli/exit-codes.ts';
import { runCli, type CliDeps } from '../../lib/cli/run-cli.ts';
import { compileS3CheckpointOptions } from '../../lib/connectors/aws/s3/s3-checkpoint-options.ts';
import { openS3CheckpointStorage, openSavepointStorage } from '../../lib/connectors/aws/s3/open-s3-checkpoint-storage.ts';
import { S3ObjectStore } from '../../lib/connectors/aws/s3/s3-object-store.ts';
import { S3Objects } from '../../lib/connectors/aws/s3/s3-objects.ts';
import { decodeMetadata } from '../../lib/storage/metadata-codec.ts';
import type { JobResult } from '../../lib/runtime/job-result.ts';
import { FakeJobControl } from '../harness/fake-job-control.ts';
import { writeTestCheckpoint } from '../harness/checkpoint-storage-fixtures.ts';
import { startS3Emulator, type S3Emulator } from '../harness/aws/s3-emulator.ts';
import { runSluice, startSluice, waitFor } from '../integration/sluice-process.ts';

const BUCKET = 'savepoints';
const ENV = ['AWS_ENDPOINT_URL_S3', 'AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const;
const saved = new Map<string, string | undefined>();
let s3: S3Emulator;

beforeAll(async () => {
  s3 = await startS3Emulator({ buckets: [BUCKET] });
  // The CLI opens s3:// locations with the SDK's default chains, as on AWS: point them at the emulator.
  for (const name of ENV) saved.set(name, process.env[name]);
  process.env['AWS_ENDPOINT_URL_S3'] = s3.endpoint;
  process.env['AWS_REGION'] = s3.clientConfig.region;
  process.env['AWS_ACCESS_KEY_ID'] = s3.clientConfig.credentials.accessKeyId;
  process.env['AWS_SECRET_ACCESS_KEY'] = s3.clientConfig.credentials.secretAccessKey;
}, 60_000);

afterAll(async () => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await s3?.stop();
});

function objectsUnder(prefix: string): S3ObjectStore {
  return new S3ObjectStore(new S3Objects(s3.client, { bucket: BUCKET, prefix }, { partSizeBytes: 5 * 1024 * 1024, queueSize: 2 }));
}

describe('savepoints of a job checkpointing to S3', () => {
  it('are written to S3 as self-contained folders, metadata last', async () => {
    const checkpoints = openS3CheckpointStorage(`s3://${BUCKET}/job-a?commitMode=s3-conditional`);
    const savepoints = openSavepointStorage(`s3://${BUCKET}/job-a/savepoints`);
    const metadata = await writeTestCheckpoint(checkpoints, 2, { savepoint: true });
    const path = await savepoints.write(metadata, checkpoints);
    expect(path).toBe(`s3://${BUCKET}/job-a/savepoints/savepoint-0000000002-2000`);
    const store = objectsUnder('job-a/savepoints');
    expect((await store.list('')).sort()).toEqual([
      'savepoint-0000000002-2000/_metadata',
      'savepoint-0000000002-2000/task-1-0.state',
      'savepoint-0000000002-2000/task-1-1.state',
    ]);
    const written = decodeMetadata((await store.get('savepoint-0000000002-2000/_metadata'))!, path, 2);
    expect(written.tasks.map((t) => t.path)).toEqual(['savepoint-0000000002-2000/task-1-0.state', 'savepoint-0000000002-2000/task-1-1.state']);
    checkpoints.close();
  });

  it('sluice savepoint and stop --checkpoint-dir s3://… find the running job through its rest.json record', async () => {
    const location = `s3://${BUCKET}/job-b?commitMode=s3-conditional`;
    const control = new FakeJobControl();
    const out: string[] = [];
    const err: string[] = [];
    const control$ = { savepoint: -1, stop: -1, recordWhileRunning: undefined as string | undefined };
    const deps: CliDeps = {
      version: '1.0.0',
      loadJob: async () => defineJob({ name: 'totals', flags: {}, build() {} }),
      runJob: async (options): Promise<JobResult> => {
        await options.onStart?.(control);
        control$.recordWhileRunning = await openS3CheckpointStorage(location).records.read('rest.json');
        control$.savepoint = await runCli(['savepoint', '--checkpoint-dir', location], deps);
        control$.stop = await runCli(['stop', '--checkpoint-dir', location], deps);
        return { durationMs: 1, sourceRecords: 0, droppedLateRecords: 0, tasks: [] };
      },
      stdout: (t) => void out.push(t),
      stderr: (t) => void err.push(t),
    };
    expect(await runCli(['run', 'job.ts', '--checkpoint-dir', location], deps)).toBe(ExitCode.ok);
    expect(JSON.parse(control$.recordWhileRunning ?? '{}')).toMatchObject({ pid: process.pid, jobName: 'totals' });
    expect([control$.savepoint, control$.stop]).toEqual([ExitCode.ok, ExitCode.ok]);
    expect(control.requests).toEqual(['savepoint', 'stop']);
    expect(out.join('')).toContain('/savepoints/savepoint-0000000007-1700000000000');
    // The record goes with the job.
    expect(await openS3CheckpointStorage(location).records.read('rest.json')).toBeUndefined();
    const missing: string[] = [];
    const code = await runCli(['savepoint', '--checkpoint-dir', location], { ...deps, stderr: (t) => void missing.push(t) });
    expect(code).not.toBe(ExitCode.ok);
    expect(missing.join('')).toContain(`no running job found: s3://${BUCKET}/job-b/rest.json does not exist`);
  });
});

/** Every line of the committed part files, sorted (duplicates kept, so that they show). */
function committedRows(output: string): string[] {
  try {
    return readdirSync(output)
      .filter((f) => /^part-\d+-\d+\.jsonl$/.test(f))
      .flatMap((f) => readFileSync(join(output, f), 'utf8').split('\n'))
      .filter((l) => l.length > 0)
      .sort();
  } catch {
    return [];
  }
}

describe('a job checkpointing to S3, stopped with a savepoint in S3', () => {
  const JOB = 'test/fixtures/jobs/throttled-window-counts.ts';
  const EVENTS = 24_000;
  let dir: string;
  let reference: string[];
  let stoppedOutput: string;
  let savepoint: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-s3-restore-'));
    const out = join(dir, 'reference');
    const run = await runSluice(['run', JOB, '--output', out, '--events', String(EVENTS), '--rate', '1000000']);
    expect(run.code, run.stderr).toBe(0);
    reference = committedRows(out);
    expect(reference.length).toBeGreaterThan(0);
  }, 120_000);

  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('the same sluice run command continues from the savepoint and ends with exactly the uninterrupted output', async () => {
    stoppedOutput = join(dir, 'stopped');
    const location = `s3://${BUCKET}/job-stop?commitMode=s3-conditional`;
    const args = ['run', JOB, '--output', stoppedOutput, '--events', String(EVENTS), '--parallelism', '2', '--checkpoint-dir', location, '--checkpoint-interval-ms', '100'];
    const { done } = startSluice([...args, '--rate', '1500']);
    await waitFor('the job to record rest.json in S3', async () => ((await openS3CheckpointStorage(location).records.read('rest.json')) === undefined ? undefined : true));
    await waitFor('a committed part file', () => (committedRows(stoppedOutput).length > 0 ? true : undefined));
    const stopped = await runSluice(['stop', '--checkpoint-dir', location]);
    expect(stopped.code, stopped.stderr).toBe(0);
    savepoint = stopped.stdout.trim();
    expect(savepoint).toMatch(new RegExp(`^s3://${BUCKET}/job-stop/savepoints/savepoint-\\d+-\\d+$`));
    const run = await done;
    expect(run.code, run.stderr).toBe(0);
    expect(committedRows(stoppedOutput).length).toBeLessThan(reference.length);

    // The output as the stop left it, for the --restore test below.
    cpSync(stoppedOutput, join(dir, 'stopped-copy'), { recursive: true });
    const resumed = await runSluice([...args, '--rate', '1000000']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`restored from savepoint ${savepoint}`);
    expect(committedRows(stoppedOutput)).toEqual(reference);
  }, 120_000);

  it('--restore s3://…/savepoints/savepoint-… starts a job in another checkpoint folder from it, at another parallelism', async () => {
    // The same output folder as the stopped run (the sink's name, which its state is kept under, is its folder).
    const output = stoppedOutput;
    rmSync(output, { recursive: true, force: true });
    cpSync(join(dir, 'stopped-copy'), output, { recursive: true });
    const run = await runSluice([
      'run', JOB, '--output', output, '--events', String(EVENTS), '--parallelism', '3', '--rate', '1000000',
      '--checkpoint-dir', join(dir, 'ck-restored'), '--restore', savepoint,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`restored from savepoint ${savepoint}`);
    expect(committedRows(output)).toEqual(reference);
  }, 120_000);

  it('--restore of an S3 folder that is no savepoint fails with exit code 2 and says why', async () => {
    const run = await runSluice([
      'run', JOB, '--output', join(dir, 'bad'), '--events', '10', '--checkpoint-dir', join(dir, 'ck-bad'),
      '--restore', `s3://${BUCKET}/job-stop/savepoints/savepoint-0000000099-1`,
    ]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`--restore s3://${BUCKET}/job-stop/savepoints/savepoint-0000000099-1: not a savepoint or checkpoint folder`);
  }, 60_000);
});

describe('S3 checkpoint commit mode default', () => {
  it('is conditional writes on AWS S3, DynamoDB with an endpoint override, a given client or a commit table', () => {
    expect(compileS3CheckpointOptions({ bucket: 'bkt' }, {}).commitMode).toBe('s3-conditional');
    expect(compileS3CheckpointOptions({ bucket: 'bkt', commitTable: 'tbl' }, {}).commitMode).toBe('dynamodb');
    expect(() => compileS3CheckpointOptions({ bucket: 'bkt' }, { AWS_ENDPOINT_URL: 'http://127.0.0.1:4566' })).toThrow(/needs a commit table/);
    expect(() => compileS3CheckpointOptions({ bucket: 'bkt', aws: { endpoint: 'http://127.0.0.1:9000' } }, {})).toThrow(/needs a commit table/);
    expect(() => compileS3CheckpointOptions({ bucket: 'bkt', s3Client: s3.client }, {})).toThrow(/needs a commit table/);
    expect(compileS3CheckpointOptions({ bucket: 'bkt', commitMode: 's3-conditional' }, { AWS_ENDPOINT_URL_S3: 'http://x' }).commitMode).toBe('s3-conditional');
  });
});
