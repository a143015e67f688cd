import {
  WatermarkStrategy,
  type DataStream,
  type PollResult,
  type Source,
  type SourceReader,
  type SourceSplit,
  type StreamEnvironment,
} from 'sluice';
import { nexmarkConfig, type NexmarkConfig, type NexmarkOptions } from './config.ts';
import { NexmarkGenerator } from './generator.ts';
import type { NexmarkEvent } from './model.ts';

type SplitEnumeratorContext = Parameters<Source<NexmarkEvent>['createSplits']>[0];
type SourceReaderContext = Parameters<Source<NexmarkEvent>['createReader']>[1];

/** Split `index` of `count` makes the positions index, index + count, ... of the global stream. */
export interface NexmarkSplit extends SourceSplit {
  readonly index: number;
  readonly count: number;
  /** Next position to emit (≡ index mod count). */
  readonly next: number;
}

/** Watermark = highest event time seen - 4 s, as the reference queries declare it (the Flink suite's DDL). */
export const WATERMARK_DELAY_MS = 4000;

export function nexmarkWatermarks(): WatermarkStrategy<NexmarkEvent> {
  return WatermarkStrategy.forBoundedOutOfOrderness<NexmarkEvent>(WATERMARK_DELAY_MS);
}

/** The source with its synchronous split and reader types spelled out (handy when driving readers directly). */
export interface NexmarkSource extends Source<NexmarkEvent, NexmarkSplit> {
  readonly config: NexmarkConfig;
  createSplits(ctx: SplitEnumeratorContext): NexmarkSplit[];
  createReader(splits: NexmarkSplit[], ctx: SourceReaderContext): NexmarkSourceReader;
}

export interface NexmarkSourceReader extends SourceReader<NexmarkEvent, NexmarkSplit> {
  poll(maxRecords: number): PollResult<NexmarkEvent>;
}

/**
 * The generator as a bounded source: one split per subtask, each striding through the positions of the one
 * global stream, so every parallelism yields the same events with the same timestamps (only their interleaving
 * across subtasks differs), and each subtask's events advance in event time together.
 */
export function nexmarkSource(options: NexmarkOptions | NexmarkConfig = {}): NexmarkSource {
  const config = nexmarkConfig(options);
  return {
    name: 'nexmark',
    bounded: true,
    config,
    createSplits({ parallelism }): NexmarkSplit[] {
      const count = Math.max(1, parallelism);
      return Array.from({ length: count }, (_, index) => ({ id: `nexmark-${index}of${count}`, index, count, next: index }));
    },
    createReader(splits: NexmarkSplit[]): NexmarkSourceReader {
      return new NexmarkReader(splits, new NexmarkGenerator(config));
    },
  };
}

/** The Nexmark events of `options` as a stream with event timestamps and the reference watermarks. */
export function nexmarkEvents(env: StreamEnvironment, options: NexmarkOptions | NexmarkConfig = {}): DataStream<NexmarkEvent> {
  return env.fromSource(nexmarkSource(options), nexmarkWatermarks(), 'nexmark');
}

class NexmarkReader implements NexmarkSourceReader {
  private readonly splits: { split: NexmarkSplit; next: number }[];
  private cursor = 0;

  constructor(
    splits: readonly NexmarkSplit[],
    private readonly generator: NexmarkGenerator,
  ) {
    this.splits = splits.map((split) => ({ split, next: split.next }));
  }

  poll(maxRecords: number): PollResult<NexmarkEvent> {
    const total = this.generator.config.events;
    while (this.splits.length > 0) {
      if (this.cursor >= this.splits.length) this.cursor = 0;
      const state = this.splits[this.cursor] as { split: NexmarkSplit; next: number };
      const stride = state.split.count;
      if (state.next >= total) {
        this.splits.splice(this.cursor, 1);
        continue;
      }
      const n = Math.min(Math.max(1, maxRecords), Math.ceil((total - state.next) / stride));
      const values = new Array<NexmarkEvent>(n);
      const timestamps = new Array<number>(n);
      const offsets = new Array<number>(n);
      const generator = this.generator;
      let position = state.next;
      for (let i = 0; i < n; i++) {
        const event = generator.eventAt(position);
        values[i] = event;
        timestamps[i] = event.dateTime;
        offsets[i] = position;
        position += stride;
      }
      state.next = position;
      const finished = position >= total;
      if (finished) this.splits.splice(this.cursor, 1);
      else if (this.splits.length > 1) this.cursor++;
      const batch = { values, timestamps, split: state.split.id, offsets };
      return finished ? { kind: 'batch', batch, finishedSplits: [state.split.id] } : { kind: 'batch', batch };
    }
    return { kind: 'end' };
  }

  currentSplits(): NexmarkSplit[] {
    return this.splits.map(({ split, next }) => ({ ...split, next }));
  }

  close(): void {}
}
