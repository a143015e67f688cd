import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  collectSink,
  jsonlFileSource,
  runInThisThread,
  SlidingEventTimeWindows,
  StreamEnvironment,
  TumblingEventTimeWindows,
  EventTimeSessionWindows,
  WatermarkStrategy,
  type WindowAssigner,
} from '../../../lib/index.ts';
import { collectionSource } from '../../../lib/connectors/local/collection-source.ts';
import {
  InvalidTimestampError,
  invalidTimestampReason,
  isValidTimestamp,
  MAX_TIMESTAMP,
  MIN_TIMESTAMP,
} from '../../../lib/core/index.ts';

/**
 * Event timestamps are whole milliseconds within ±8.64e15 (what a JS Date covers). A record with any other
 * timestamp goes to the source's dead letters with the reason, or fails the job naming it; it never vanishes
 * silently or lands in a wrongly computed window.
 */
const root = mkdtempSync(join(tmpdir(), 'sluice-ts-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

interface Tx {
  readonly account: string;
  readonly amount: number;
  readonly ts: unknown;
}

/** The bad timestamps of the issue, as they appear in JSON lines (NaN cannot: an assigner computes it). */
const BAD_LINES: [string, string][] = [
  ['{"account":"x","amount":1,"ts":1e300}', 'outside the range of dates'],
  ['{"account":"x","amount":1,"ts":-1e300}', 'outside the range of dates'],
  ['{"account":"x","amount":1,"ts":1152921504606846976}', 'outside the range of dates'],
  ['{"account":"x","amount":1,"ts":9007199254740000}', 'outside the range of dates'],
  ['{"account":"x","amount":1,"ts":"1700000000000"}', 'is a string, not a number'],
  ['{"account":"x","amount":1,"ts":12.5}', 'not a whole number'],
  ['{"account":"x","amount":1,"ts":null}', 'is a null, not a number'],
];

function windowSums(assigner: WindowAssigner, path: string, deadLetterPath: string | undefined) {
  const env = new StreamEnvironment({ parallelism: 1 });
  const sink = collectSink<string>('sums');
  env
    .fromSource(
      jsonlFileSource<Tx>({ path, deadLetterPath }),
      WatermarkStrategy.forBoundedOutOfOrderness<Tx>(0).withTimestampAssigner((t) => t.ts as number),
    )
    .keyBy((t) => t.account)
    .window(assigner)
    .aggregate(
      {
        createAccumulator: () => 0,
        add: (t: Tx, acc: number) => acc + t.amount,
        getResult: (acc: number) => acc,
        merge: (a: number, b: number) => a + b,
      },
      (sum, account, w) => `${account} [${w.start},${w.end}) ${sum}`,
    )
    .sinkTo(sink);
  return { env, sink };
}

describe('event timestamp validity', () => {
  it('accepts whole milliseconds within the range of dates, negative ones included', () => {
    for (const t of [0, -1, 1_700_000_000_000, MAX_TIMESTAMP, MIN_TIMESTAMP]) expect(isValidTimestamp(t)).toBe(true);
    for (const t of [MAX_TIMESTAMP + 1, MIN_TIMESTAMP - 1, 2 ** 60, Number.MAX_SAFE_INTEGER, 1e300, -1e300, NaN, Infinity, 0.5, '5', null]) {
      expect(isValidTimestamp(t)).toBe(false);
      expect(invalidTimestampReason(t)).toMatch(/event timestamp/);
    }
    expect(new Date(MAX_TIMESTAMP).getTime()).toBe(MAX_TIMESTAMP);
    expect(new Date(MIN_TIMESTAMP).getTime()).toBe(MIN_TIMESTAMP);
  });
});

describe('records with an invalid event timestamp', () => {
  it('go to the source dead-letter file with the reason, line and raw text; the rest of the output is exact', async () => {
    const dir = join(root, String(n++));
    const input = `${dir}-in.jsonl`;
    const deadLetters = `${dir}-dead.jsonl`;
    const good = ['{"account":"a","amount":5,"ts":1000}', '{"account":"a","amount":7,"ts":9999}', '{"account":"a","amount":11,"ts":10000}'];
    // Good lines between the bad ones, so that line numbers are checked across a batch.
    const lines = [good[0]!, ...BAD_LINES.map(([l]) => l), good[1]!, good[2]!];
    writeFileSync(input, lines.join('\n') + '\n');
    const { env, sink } = windowSums(TumblingEventTimeWindows.of(10_000), input, deadLetters);
    const result = await runInThisThread(env);
    expect(sink.values.sort()).toEqual(['a [0,10000) 12', 'a [10000,20000) 11']);
    expect(result.sourceRecords).toBe(3);
    const letters = readFileSync(deadLetters, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(letters.map((l) => l.raw)).toEqual(BAD_LINES.map(([l]) => l));
    expect(letters.map((l) => l.line)).toEqual(BAD_LINES.map((_, i) => i + 2));
    letters.forEach((letter, i) => {
      expect(letter.error).toContain(BAD_LINES[i]![1]);
      expect(letter.offset).toBe(Buffer.byteLength(lines.slice(0, i + 1).join('\n') + '\n'));
    });
  });

  it('fail the job naming the record origin and the value when the source has no dead-letter output', async () => {
    const input = join(root, `${n++}-in.jsonl`);
    writeFileSync(input, '{"account":"a","amount":5,"ts":1000}\n{"account":"a","amount":1,"ts":1e300}\n');
    const { env, sink } = windowSums(TumblingEventTimeWindows.of(10_000), input, undefined);
    const failure = await runInThisThread(env).then(
      () => undefined,
      (err: unknown) => err,
    );
    const cause = (failure as Error).cause;
    expect(cause).toBeInstanceOf(InvalidTimestampError);
    expect((cause as Error).message).toContain(`split ${input}#0 offset 37`);
    expect((cause as Error).message).toContain('1e+300');
    expect((cause as InvalidTimestampError).timestamp).toBe(1e300);
    expect(sink.values).toEqual([]);
  });

  it.each([
    ['NaN', Number.NaN],
    ['2^60', 2 ** 60],
    ['a string', '1000'],
  ])('from a timestamp assigner returning %s fail an assignTimestampsAndWatermarks operator, naming the origin', async (_name, bad) => {
    const env = new StreamEnvironment({ parallelism: 1 });
    const values = [{ ts: 1 as unknown }, { ts: bad }];
    env
      .fromSource(collectionSource(values))
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<{ ts: unknown }>().withTimestampAssigner((v) => v.ts as number))
      .sinkTo(collectSink('out'));
    const failure = (await runInThisThread(env).catch((err: unknown) => err)) as Error;
    expect(failure.cause).toBeInstanceOf(InvalidTimestampError);
    expect((failure.cause as Error).message).toMatch(/record from split collection offset 1: event timestamp/);
  });

  it('carried by a source without a WatermarkStrategy fail the job (no silent window arithmetic on them)', async () => {
    const env = new StreamEnvironment({ parallelism: 1 });
    env
      .fromSource(collectionSource([1, 2, 3], { timestampOf: (v) => (v === 2 ? 1e300 : v) }))
      .sinkTo(collectSink('out'));
    const failure = (await runInThisThread(env).catch((err: unknown) => err)) as Error;
    expect(failure.cause).toBeInstanceOf(InvalidTimestampError);
    expect((failure.cause as Error).message).toContain('offset 1');
  });
});

describe('window arithmetic at the edges of the valid range', () => {
  const at = async (assigner: WindowAssigner, stamps: number[]): Promise<string[]> => {
    const input = join(root, `${n++}-in.jsonl`);
    writeFileSync(input, stamps.map((ts) => JSON.stringify({ account: 'a', amount: 1, ts })).join('\n'));
    const { env, sink } = windowSums(assigner, input, undefined);
    await runInThisThread(env);
    return sink.values.sort();
  };

  it('tumbling windows are exactly 10 s long near the largest timestamp', async () => {
    const t = MAX_TIMESTAMP - 5;
    expect(await at(TumblingEventTimeWindows.of(10_000), [t - 10_000, t, MAX_TIMESTAMP])).toEqual([
      'a [8639999999980000,8639999999990000) 1',
      'a [8639999999990000,8640000000000000) 1',
      'a [8640000000000000,8640000000010000) 1',
    ]);
  });

  it('negative timestamps get the same windows as positive ones, shifted', async () => {
    expect(await at(TumblingEventTimeWindows.of(10_000), [-10_001, -10_000, -1, 0, MIN_TIMESTAMP])).toEqual([
      'a [-10000,0) 2',
      'a [-20000,-10000) 1',
      'a [-8640000000000000,-8639999999990000) 1',
      'a [0,10000) 1',
    ]);
    expect(await at(SlidingEventTimeWindows.of(10_000, 5_000), [-1, 0])).toEqual([
      'a [-10000,0) 1',
      'a [-5000,5000) 2',
      'a [0,10000) 1',
    ]);
    expect(await at(EventTimeSessionWindows.withGap(100), [-250, -200, -50, 0])).toEqual(['a [-250,-100) 2', 'a [-50,100) 2']);
  });

  it('window durations are bounded so that every boundary stays a safe integer', () => {
    expect(() => TumblingEventTimeWindows.of(2 ** 52)).toThrow(/largest allowed/);
    expect(() => SlidingEventTimeWindows.of(2 ** 52, 1000)).toThrow(/largest allowed/);
    expect(() => EventTimeSessionWindows.withGap(2 ** 52)).toThrow(/largest allowed/);
  });
});
