import { describe, expect, it } from 'vitest';
import { WatermarkStrategy } from '../../../lib/contracts/watermark-strategy.ts';
import { SplitWatermarks } from '../../../lib/runtime/split-watermarks.ts';

const strategy = WatermarkStrategy.forMonotonousTimestamps<number>()
  .withTimestampAssigner((v) => v)
  .withIdleness(1000);

/** Every timestamp in these tests is valid. */
const noInvalid = (): void => {
  throw new Error('unexpected invalid timestamp');
};

function batch(split: string, ...values: number[]) {
  return { values, timestamps: values.map(() => 0), split };
}

/** Two splits read side by side (as Kinesis shards), `a` delivering and `b` as the reader reports it. */
function twoSplits(): SplitWatermarks {
  const w = new SplitWatermarks(strategy as WatermarkStrategy<unknown>, 'source', 0, 0);
  w.register(['a', 'b'], 0);
  return w;
}

describe('SplitWatermarks idleness', () => {
  it('a split that is not caught up (no first answer, behind, retrying) never goes idle, however long', () => {
    const w = twoSplits();
    w.onBatch(batch('a', 5000), 0, noInvalid);
    expect(w.advance()).toBeUndefined(); // b holds the watermark back
    const caughtUp = (id: string) => id === 'a';
    expect(w.checkIdle(60_000, caughtUp)).toBe(false);
    w.onBatch(batch('a', 9000), 60_000, noInvalid);
    expect(w.advance()).toBeUndefined();
  });

  it('a caught-up split goes idle once it has been caught up for the timeout, not counting the time before', () => {
    const w = twoSplits();
    w.onBatch(batch('a', 5000), 0, noInvalid);
    let bCaughtUp = false;
    const caughtUp = (id: string) => id === 'b' && bCaughtUp; // a keeps delivering
    expect(w.checkIdle(5000, caughtUp)).toBe(false); // b was behind for 5 s: no idle time accrued
    bCaughtUp = true;
    expect(w.checkIdle(5500, caughtUp)).toBe(false);
    expect(w.checkIdle(6400, caughtUp)).toBe(false); // caught up for 900 ms only
    w.checkIdle(6500, caughtUp);
    w.onBatch(batch('a', 9000), 6500, noInvalid);
    expect(w.advance()).toBe(8999); // b idle: a alone sets the watermark
  });

  it('an idle split that is no longer caught up holds the watermark back again before its records arrive', () => {
    const w = twoSplits();
    let bCaughtUp = true;
    const caughtUp = (id: string) => id === 'b' && bCaughtUp; // a keeps delivering
    w.onBatch(batch('a', 5000), 0, noInvalid);
    w.checkIdle(0, caughtUp);
    w.checkIdle(1000, caughtUp);
    expect(w.advance()).toBe(4999);
    bCaughtUp = false; // e.g. a GetRecords answer behind the tip: records are on the way
    w.checkIdle(1100, caughtUp);
    w.onBatch(batch('a', 9000), 1100, noInvalid);
    expect(w.advance()).toBeUndefined();
    w.onBatch(batch('b', 6000), 1200, noInvalid);
    expect(w.advance()).toBe(5999);
  });

  it('an idle split whose reader has data again holds the watermark back while another split delivers (no wait poll between)', () => {
    const w = twoSplits();
    let bCaughtUp = true;
    const caughtUp = (id: string) => id === 'b' && bCaughtUp;
    w.onBatch(batch('a', 5000), 0, noInvalid);
    w.checkIdle(0, caughtUp);
    w.checkIdle(1000, caughtUp);
    expect(w.advance()).toBe(4999); // b idle
    bCaughtUp = false; // b's records are fetched and buffered, but the reader returns a's batch first
    w.onBatch(batch('a', 9000), 1100, noInvalid);
    w.wakeIdle(caughtUp);
    expect(w.advance()).toBeUndefined();
    w.onBatch(batch('b', 6000), 1200, noInvalid);
    expect(w.advance()).toBe(5999);
  });

  it('a split the reader no longer lists as caught up counts for alignment again', () => {
    const w = twoSplits();
    w.onBatch(batch('a', 5000), 0, noInvalid);
    w.onBatch(batch('b', 3000), 0, noInvalid);
    w.markCaughtUp(['b']);
    expect(w.alignmentWatermark()).toBe(4999);
    w.markCaughtUp([]); // b is behind again
    expect(w.alignmentWatermark()).toBe(2999);
  });

  it('records break caught-up time: the timeout counts again from when the split is next seen caught up', () => {
    const w = twoSplits();
    const caughtUp = () => true;
    w.onBatch(batch('a', 5000), 0, noInvalid);
    w.onBatch(batch('b', 4000), 0, noInvalid);
    w.checkIdle(100, caughtUp);
    w.onBatch(batch('b', 4500), 900, noInvalid);
    expect(w.checkIdle(1200, caughtUp)).toBe(false); // a idle (caught up since 100), b had a record at 900
    expect(w.checkIdle(2100, caughtUp)).toBe(false);
    expect(w.checkIdle(2200, caughtUp)).toBe(true);
  });
});
