/**
 * Per-account transaction totals in tumbling event-time windows.
 *
 *   npx sluice run examples/fraud-detection.ts --input FILE --output DIR [--parallelism N] [--max-delay-ms 5000]
 *     [--window-ms 10000] [--late-output FILE] [--dead-letter FILE]
 *
 * Input: JSON lines {"account":"a-17","amountCents":1250,"ts":1700000000123} (ts = event time, epoch ms); a file
 * or a directory of *.jsonl files.
 * Output: DIR/part-<subtask>-<n>.jsonl, one line per account and window:
 *   {"account":"a-17","windowStart":1700000000000,"windowEnd":1700000010000,"count":3,"totalCents":3750}
 * In-progress files are hidden ('.'-prefixed) until complete; DIR holds nothing else.
 * Late events (their window had already fired: more than --max-delay-ms behind the watermark) are written as
 * the original records to --late-output; without it they are counted and the count is printed on stderr.
 * Malformed lines (bad JSON; fields missing or of the wrong type; an amountCents that is not a whole number within
 * ±(2^53 - 1), which JSON.parse would round; a ts that is not whole epoch milliseconds within ±8.64e15) go to
 * --dead-letter as {"file","line","offset","error","raw"}; without it they are skipped, and each input split prints
 * their count on stderr. A window total leaving ±(2^53 - 1) cents fails the job, naming the account, rather than
 * be rounded. Neither file defaults to a path inside DIR, so DIR can be read as the input of another job.
 * Both are exactly once across crashes and reruns (with --checkpoint-dir), and neither overwrites a file: an
 * existing --late-output is refused unless it is this job's own, continued from its checkpoints; an existing
 * --dead-letter unless it holds the dead letters of the same input. Neither may be the input or inside it.
 */
import {
  OutputTag,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  checkOutputDirectory,
  defineJob,
  invalidTimestampReason,
  jsonlFileSink,
  jsonlFileSource,
  type AggregateFunction,
  type WindowResultFunction,
} from 'sluice';
import { lateEventsSink } from './support/late-events-sink.ts';

export interface Transaction {
  readonly account: string;
  readonly amountCents: number;
  /** Event time, epoch ms. */
  readonly ts: number;
}

export interface AccountWindowTotal {
  readonly account: string;
  readonly windowStart: number;
  readonly windowEnd: number;
  readonly count: number;
  readonly totalCents: number;
}

export interface Totals {
  readonly count: number;
  readonly totalCents: number;
}

/**
 * Checks one parsed input line; a throw sends the line to the dead letters. Keeps the record as it was read.
 * Numbers must be exact: JSON.parse rounds integers beyond 2^53 - 1 without a word, so an amount that is not a
 * safe integer was already changed by parsing and is rejected rather than summed.
 */
export function parseTransaction(value: unknown): Transaction {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('expected an object {"account", "amountCents", "ts"}');
  }
  const { account, amountCents, ts } = value as Record<string, unknown>;
  if (typeof account !== 'string' || account.length === 0) throw new Error('"account" must be a non-empty string');
  if (typeof amountCents !== 'number' || !Number.isSafeInteger(amountCents)) {
    throw new Error(
      `"amountCents" must be a whole number of cents from -(2^53 - 1) to 2^53 - 1, got ${JSON.stringify(amountCents) ?? String(amountCents)}` +
        (typeof amountCents === 'number' && Number.isInteger(amountCents) ? ' (as parsed: larger integers lose precision)' : ''),
    );
  }
  const badTs = invalidTimestampReason(ts);
  if (badTs !== undefined) throw new Error(`"ts": ${badTs}`);
  return value as Transaction;
}

/** A total that left the safe-integer range would be rounded; the job fails instead, naming account and window. */
function checkedTotal(totalCents: number, account: string): number {
  if (!Number.isSafeInteger(totalCents)) {
    throw new Error(
      `the total of account "${account}" in this window left the safe-integer range (|total| > 2^53 - 1 cents, ` +
        `got ${totalCents}): it cannot be summed exactly`,
    );
  }
  return totalCents;
}

/** Accumulators are state: never mutated, a new one per record. A sum that overflows fails the job (checkedTotal). */
export const countAndSum: AggregateFunction<Transaction, Totals, Totals> = {
  createAccumulator: () => ({ count: 0, totalCents: 0 }),
  add: (t, acc) => ({ count: acc.count + 1, totalCents: checkedTotal(acc.totalCents + t.amountCents, t.account) }),
  getResult: (acc) => acc,
  merge: (a, b) => ({ count: a.count + b.count, totalCents: checkedTotal(a.totalCents + b.totalCents, '(merged)') }),
};

/** One account's totals for one window, as an output row. */
export const toAccountWindowTotal: WindowResultFunction<string, Totals, AccountWindowTotal> = (sum, account, window) => ({
  account,
  windowStart: window.start,
  windowEnd: window.end,
  count: sum.count,
  totalCents: sum.totalCents,
});

export default defineJob({
  name: 'fraud-detection',
  description: 'per-account transaction count and total in tumbling event-time windows',
  flags: {
    input: { type: 'string', required: true, description: 'JSONL file, or directory of *.jsonl files, of {account, amountCents, ts}' },
    output: { type: 'string', required: true, description: 'directory for the part-*.jsonl window totals' },
    maxDelayMs: {
      type: 'number',
      integer: true,
      min: 0,
      default: 5000,
      description: 'how far (ms) events may arrive out of order before they are late',
    },
    windowMs: { type: 'number', integer: true, min: 1, default: 10000, description: 'window size in ms' },
    lateOutput: {
      type: 'string',
      description:
        'JSONL file for late events (the original records), committed with each checkpoint; must not exist unless it is this job\'s own (same --checkpoint-dir); default: count them on stderr only',
    },
    deadLetter: {
      type: 'string',
      description:
        'JSONL file for malformed input lines, with file and line number, each once; must not exist unless it holds the dead letters of the same input; default: count them on stderr only',
    },
  },
  build(env, flags) {
    checkOutputDirectory(flags.output, '--output');
    const transactions = env.fromSource(
      jsonlFileSource<Transaction>({ path: flags.input, deadLetterPath: flags.deadLetter, deadLetterLabel: '--dead-letter', parse: parseTransaction }),
      WatermarkStrategy.forBoundedOutOfOrderness<Transaction>(flags.maxDelayMs).withTimestampAssigner((t) => t.ts),
      'transactions',
    );
    const late = new OutputTag<Transaction>('late-transactions');
    const totals = transactions
      .keyBy((t) => t.account)
      .window(TumblingEventTimeWindows.of(flags.windowMs))
      .sideOutputLateData(late)
      .aggregate(countAndSum, toAccountWindowTotal, 'account totals');
    totals.sinkTo(jsonlFileSink<AccountWindowTotal>({ dir: flags.output }), 'window totals');
    totals
      .getSideOutput(late)
      .sinkTo(
        lateEventsSink<Transaction>({
          jobName: 'fraud-detection',
          path: flags.lateOutput,
          label: '--late-output',
          inputs: [flags.input],
          keepHint: 'pass --late-output FILE to keep them',
        }),
        'late events',
      )
      .setParallelism(1);
  },
});
