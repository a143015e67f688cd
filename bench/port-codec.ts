/**
 * The batch codec between worker threads (lib/runtime/channels/port-channel.ts), encode and decode in one thread:
 *
 *   npx tsx bench/port-codec.ts [current|msgpackr] [--batches N] [--surrogates]
 *
 * `current` is encodeBatch/decodeBatch as the channel uses them; `msgpackr` is the plain msgpackr round trip they
 * build on (pack, exact-size copy, unpack), the baseline for what the lone-surrogate check costs. `--surrogates`
 * puts one account with a lone surrogate in every batch (the structured-clone path). Prints records/s.
 */
import { Packr } from 'msgpackr';
import { decodeBatch, encodeBatch } from '../lib/runtime/channels/batch-codec.ts';
import type { RecordBatch } from '../lib/core/index.ts';

const args = process.argv.slice(2);
const mode = args[0] === 'msgpackr' ? 'msgpackr' : 'current';
const batchesIndex = args.indexOf('--batches');
const batches = batchesIndex >= 0 ? Number(args[batchesIndex + 1]) : 2000;
const surrogates = args.includes('--surrogates');
const BATCH = 1024;

function makeBatch(n: number): RecordBatch<unknown> {
  const values = [];
  const timestamps = [];
  for (let i = 0; i < BATCH; i++) {
    const ts = 1_700_000_000_000 + n * BATCH + i;
    const account = surrogates && i === 0 ? '\uD800x' : `a-${(n * 7919 + i) % 10_000}`;
    values.push({ account, amountCents: (i * 37) % 100_000, ts });
    timestamps.push(ts);
  }
  return { values, timestamps, split: 'transactions.jsonl:0', offsets: timestamps.map((_, i) => n * BATCH + i) };
}

const input = Array.from({ length: 16 }, (_, n) => makeBatch(n));
const packr = new Packr({ useRecords: true, moreTypes: true });

let checksum = 0;
const start = performance.now();
for (let n = 0; n < batches; n++) {
  const batch = input[n % input.length]!;
  if (mode === 'msgpackr') {
    const packed = packr.pack([batch.values, batch.timestamps, batch.split ?? null, batch.offsets ?? null]);
    const bytes = Uint8Array.prototype.slice.call(packed, 0, packed.length) as Uint8Array;
    const [values] = packr.unpack(bytes) as [unknown[]];
    checksum += values.length;
  } else {
    const wire = encodeBatch(batch);
    // What postMessage does to a batch that is not transferred as bytes.
    const decoded = decodeBatch('v' in wire ? structuredClone(wire) : wire);
    checksum += decoded.values.length;
  }
}
const seconds = (performance.now() - start) / 1000;
process.stdout.write(`${mode}${surrogates ? ' (lone surrogates)' : ''}: ${Math.round((checksum / seconds)).toLocaleString('en-US')} records/s\n`);
