// examples/kinesis-to-dynamodb.ts against the emulators (kinesalite, s3rver, DynamoDB Local), as a child process:
// an uninterrupted run and runs SIGKILLed at random moments then restarted with the identical command must leave the
// table exactly equal to a plain-loop reference (no window lost, none counted twice), with checkpoints in S3
// committed through a DynamoDB conditional write. Malformed records land in the S3 dead-letter prefix.
import { DescribeTableCommand, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { ListObjectsV2Command, GetObjectCommand } from '@aws-sdk/client-s3';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateInput, lateEvents, random, referenceTotals, runChild, type ChildRun, type InputSpec, type Reference } from '../crash/crash-harness.ts';
import { BUCKET, feedTransactions, startExampleStack, tableLines, type ExampleStack } from '../harness/aws/example-stack.ts';

const EXAMPLE = 'examples/kinesis-to-dynamodb.ts';
const STREAM = 'transactions';
const SPEC: InputSpec = {
  records: 30_000,
  accounts: 40,
  t0: 1_700_000_000_000,
  stepMs: 3,
  maxDelayMs: 2000,
  windowMs: 5000,
  malformedAfter: [777, 20_000],
};

let stack: ExampleStack;
let reference: Reference;
let scenario = 0;

beforeAll(async () => {
  stack = await startExampleStack();
  const input = generateInput(SPEC, 11);
  expect(lateEvents(input.records, SPEC)).toBe(0);
  reference = referenceTotals(input.records, SPEC.windowMs);
  await feedTransactions(stack, STREAM, 2, input.text);
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

function args(table: string, prefix: string, parallelism: number): string[] {
  return [
    'run', EXAMPLE,
    '--stream', STREAM,
    '--table', table,
    '--checkpoint-dir', `s3://${BUCKET}/${prefix}`,
    '--checkpoint-interval-ms', '300',
    '--parallelism', String(parallelism),
    '--max-delay-ms', String(SPEC.maxDelayMs),
    '--window-ms', String(SPEC.windowMs),
    '--stop-when-idle-ms', '1500',
    '--create-table',
    '--dead-letter-s3', `s3://${BUCKET}/dead-letters/${prefix}`,
    '--restart-delay-ms', '100',
  ];
}

async function deadLetters(prefix: string): Promise<unknown[]> {
  const listed = await stack.s3.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `dead-letters/${prefix}/` }));
  const letters: unknown[] = [];
  for (const object of listed.Contents ?? []) {
    const body = await stack.s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: object.Key }));
    const text = await body.Body!.transformToString();
    for (const line of text.split('\n')) if (line !== '') letters.push(JSON.parse(line));
  }
  return letters;
}

/** Every item of a DynamoDB table, unmarshalled. */
async function scanAll(table: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await stack.dynamodb.client.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) items.push(unmarshall(item));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
}

async function tableExists(table: string): Promise<boolean> {
  return stack.dynamodb.client.send(new DescribeTableCommand({ TableName: table })).then(
    () => true,
    (error: { name?: string }) => {
      if (error.name === 'ResourceNotFoundException') return false;
      throw error;
    },
  );
}

function history(runs: readonly ChildRun[]): string {
  return runs.map((r, i) => `run ${i + 1}: ${r.signal ?? `exit ${r.code}`}${r.killedByTest ? ' (killed)' : ''}\n${r.stderr.trim()}`).join('\n---\n');
}

function expectTable(lines: readonly string[], context: string): void {
  const expected = new Set(reference.lines);
  const missing = reference.lines.filter((l) => !lines.includes(l));
  const unexpected = lines.filter((l) => !expected.has(l));
  expect({ rows: lines.length, missing: missing.slice(0, 5), unexpected: unexpected.slice(0, 5) }, context).toEqual({
    rows: reference.lines.length,
    missing: [],
    unexpected: [],
  });
}

describe('examples/kinesis-to-dynamodb.ts on the emulators', () => {
  it('an uninterrupted run at parallelism 2 writes every window total exactly once', async () => {
    const name = `run-${++scenario}`;
    // --create-table also creates the checkpoint commit table and the marker table: neither exists before the run.
    const commitTable = `${name}-commits`;
    expect(await tableExists(commitTable)).toBe(false);
    expect(await tableExists(`${name}-markers`)).toBe(false);
    const run = await runChild(args(name, name, 2), { env: { ...stack.env, SLUICE_CHECKPOINT_COMMIT_TABLE: commitTable } });
    expect(run.code, run.stderr).toBe(0);
    expectTable(await tableLines(stack, name), run.stderr);
    // The result table holds only results; the commit markers are in their own table, the commits in theirs.
    const results = await scanAll(name);
    expect(results.filter((item) => typeof item['windowStart'] !== 'number' || typeof item['totalCents'] !== 'number')).toEqual([]);
    expect(results).toHaveLength(reference.lines.length);
    const markers = await scanAll(`${name}-markers`);
    expect(markers.length).toBeGreaterThan(0);
    expect(markers.every((marker) => String(marker['pk']).startsWith('#sluice-commit#'))).toBe(true);
    expect((await scanAll(commitTable)).length).toBeGreaterThan(0);
    const letters = (await deadLetters(name)) as { shardId?: string; sequenceNumber?: string }[];
    expect(letters).toHaveLength(SPEC.malformedAfter.length);
    for (const letter of letters) {
      expect(letter.shardId).toMatch(/^shardId-/);
      expect(letter.sequenceNumber).toMatch(/^\d+$/);
    }
  }, 240_000);

  it.each([1, 2, 3])('seed %i: SIGKILLed at random moments, then the identical command: the table is exact', async (seed) => {
    const next = random(seed * 104_729);
    const name = `kill-${seed}-${++scenario}`;
    const parallelism = 1 + (seed % 2);
    const command = args(name, name, parallelism);
    const runs: ChildRun[] = [];
    const kills = 1 + Math.floor(next() * 2);
    for (let k = 0; k < kills; k++) {
      const run = await runChild(command, { env: stack.env, killAfterMs: 1200 + Math.floor(next() * 3500) });
      runs.push(run);
      if (!run.killedByTest) expect(run.code, history(runs)).toBe(0);
    }
    let final: ChildRun | undefined;
    for (let i = 0; i < 3 && final?.code !== 0; i++) {
      final = await runChild(command, { env: stack.env });
      runs.push(final);
    }
    expect(final?.code, history(runs)).toBe(0);
    expectTable(await tableLines(stack, name), history(runs));
  }, 240_000);
});
