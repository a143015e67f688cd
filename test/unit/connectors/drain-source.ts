import { expect } from 'vitest';
import { ManualClock } from '../../../lib/core/index.ts';
import type { Clock } from '../../../lib/core/index.ts';
import type { Source, SourceReader, SourceSplit } from '../../../lib/connectors/source.ts';

export interface ReadRecord<T> {
  value: T;
  timestamp: number;
  split: string;
  offset: number;
  subtask: number;
}

export function readerContext(subtask: number, parallelism: number, clock: Clock = new ManualClock(0)) {
  return { subtask, parallelism, clock, signal: new AbortController().signal };
}

/** Polls a reader until it ends; checks the batch contract on the way (one split, offsets parallel to values). */
export async function drainReader<T, S extends SourceSplit>(
  reader: SourceReader<T, S>,
  subtask = 0,
  maxRecords = 7,
  maxPolls = 1_000_000,
): Promise<ReadRecord<T>[]> {
  const out: ReadRecord<T>[] = [];
  for (let polls = 0; polls < maxPolls; polls++) {
    const result = await reader.poll(maxRecords);
    if (result.kind === 'end') return out;
    if (result.kind === 'wait') throw new Error('bounded reader asked to wait');
    const { values, timestamps, offsets, split } = result.batch;
    expect(values.length).toBeGreaterThan(0);
    expect(values.length).toBeLessThanOrEqual(maxRecords);
    expect(timestamps.length).toBe(values.length);
    expect(offsets?.length).toBe(values.length);
    for (let i = 0; i < values.length; i++) {
      out.push({ value: values[i] as T, timestamp: timestamps[i] as number, split, offset: offsets![i] as number, subtask });
    }
  }
  throw new Error('reader did not end');
}

/** Runs a bounded source the way the runtime does: split i goes to subtask i % parallelism. */
export async function readAll<T, S extends SourceSplit>(
  source: Source<T, S>,
  parallelism: number,
  maxRecords = 7,
): Promise<ReadRecord<T>[]> {
  const splits = await source.createSplits({ parallelism });
  const out: ReadRecord<T>[] = [];
  for (let subtask = 0; subtask < parallelism; subtask++) {
    const mine = splits.filter((_, i) => i % parallelism === subtask);
    const reader = await source.createReader(mine, readerContext(subtask, parallelism));
    out.push(...(await drainReader(reader, subtask, maxRecords)));
    await reader.close();
  }
  return out;
}
