/**
 * `npm run dev:aws`: examples/kinesis-to-dynamodb.ts end to end on local AWS emulators, no account needed.
 *
 * Starts kinesalite (Kinesis), s3rver (S3) and DynamoDB Local (needs Java 17+) on 127.0.0.1, creates the stream
 * (2 shards), the bucket and the checkpoint commit table, puts generated JSON transactions (a few malformed), runs
 * the example with `--checkpoint-dir s3://…` and `--stop-when-idle-ms`, then checks the table against totals
 * computed with a plain loop and prints a few rows. DynamoDB Local listens on every interface, so this script runs
 * itself inside a private network namespace when the machine allows one (unshare -rn).
 *
 *   npm run dev:aws [-- --records 20000 --parallelism 2]
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateInput, referenceTotals, type InputSpec } from '../test/crash/crash-harness.ts';
import { BUCKET, feedTransactions, startExampleStack, tableLines } from '../test/harness/aws/example-stack.ts';
import { runInPrivateNetwork } from '../test/harness/aws/private-network.ts';

const { values } = parseArgs({
  options: { records: { type: 'string', default: '20000' }, parallelism: { type: 'string', default: '2' } },
});
const records = Number(values.records);
const parallelism = Number(values.parallelism);
if (!Number.isInteger(records) || records < 1 || !Number.isInteger(parallelism) || parallelism < 1) {
  console.error('usage: npm run dev:aws [-- --records N --parallelism P] (positive integers)');
  process.exit(2);
}

await runInPrivateNetwork('dev:aws', import.meta.url, main);

async function main(): Promise<number> {
  const spec: InputSpec = {
    records,
    accounts: 25,
    t0: Date.UTC(2026, 10, 1),
    stepMs: 5,
    maxDelayMs: 2000,
    windowMs: 10_000,
    malformedAfter: [Math.floor(records / 3)],
  };
  console.log('starting kinesalite, s3rver and DynamoDB Local on 127.0.0.1 ...');
  const stack = await startExampleStack();
  try {
    const input = generateInput(spec, 42);
    const reference = referenceTotals(input.records, spec.windowMs);
    const put = await feedTransactions(stack, 'transactions', 2, input.text);
    console.log(`stream "transactions" (2 shards): ${put} records put (${spec.malformedAfter.length} malformed)`);
    const args = [
      'run', 'examples/kinesis-to-dynamodb.ts',
      '--stream', 'transactions',
      '--table', 'account-window-totals',
      '--checkpoint-dir', `s3://${BUCKET}/checkpoints`,
      '--checkpoint-interval-ms', '1000',
      '--parallelism', String(parallelism),
      '--max-delay-ms', String(spec.maxDelayMs),
      '--window-ms', String(spec.windowMs),
      '--stop-when-idle-ms', '2000',
      '--create-table',
      '--dead-letter-s3', `s3://${BUCKET}/dead-letters`,
    ];
    console.log(`$ sluice ${args.join(' ')}`);
    const sluice = fileURLToPath(new URL('../bin/sluice.js', import.meta.url));
    const code = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, [sluice, ...args], { stdio: 'inherit', env: { ...process.env, ...stack.env } });
      child.on('exit', (c) => resolve(c ?? 1));
    });
    if (code !== 0) {
      console.error(`the job exited with ${code}`);
      return 1;
    }
    const rows = await tableLines(stack, 'account-window-totals');
    const expected = new Set(reference.lines);
    const missing = reference.lines.filter((l) => !rows.includes(l)).length;
    const unexpected = rows.filter((l) => !expected.has(l)).length;
    console.log(`\ntable "account-window-totals": ${rows.length} items; first ones:`);
    for (const row of rows.slice(0, 5)) console.log(`  ${row}`);
    if (missing === 0 && unexpected === 0) {
      console.log(`OK: the table equals the reference (${reference.lines.length} account windows, ${reference.records} transactions)`);
      return 0;
    }
    console.error(`MISMATCH: ${missing} expected rows missing, ${unexpected} rows not in the reference`);
    return 1;
  } finally {
    await stack.stop();
  }
}
