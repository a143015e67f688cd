import { ConfigError, NO_TIMESTAMP } from '../../core/index.ts';
import type { PollResult, Source, SourceReader, SourceSplit } from '../source.ts';

export interface CollectionSourceOptions<T> {
  name?: string;
  /** Event timestamp of each value (else records carry none until a WatermarkStrategy assigns them). */
  timestampOf?: (value: T) => number;
  /** Exact batch sizes to emit, in order (tests use this to vary batch boundaries); the rest uses `batchSize`. */
  batchSizes?: readonly number[];
  /** @default 1024 */
  batchSize?: number;
}

interface CollectionSplit extends SourceSplit {
  readonly position: number;
}

/**
 * A bounded, non-parallel source over an in-memory array. The array is captured by closure, so jobs using it run
 * only in the thread that built them (tests and `runInThisThread`); worker threads rebuild the job from its module.
 */
export function collectionSource<T>(values: readonly T[], options: CollectionSourceOptions<T> = {}): Source<T, CollectionSplit> {
  const batchSize = options.batchSize ?? 1024;
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new ConfigError(`batchSize must be a positive integer, got ${batchSize}`);
  const sizes = options.batchSizes ?? [];
  return {
    name: options.name ?? 'Collection',
    bounded: true,
    maxParallelism: 1,
    createSplits: () => [{ id: 'collection', position: 0 }],
    createReader(splits): SourceReader<T, CollectionSplit> {
      let position = splits[0]?.position ?? values.length;
      let batchNo = 0;
      return {
        poll(): PollResult<T> {
          if (position >= values.length) return { kind: 'end' };
          const size = Math.max(1, sizes[batchNo++] ?? batchSize);
          const end = Math.min(values.length, position + size);
          const out = values.slice(position, end);
          const offsets: number[] = [];
          const timestamps: number[] = [];
          for (let i = position; i < end; i++) {
            offsets.push(i);
            timestamps.push(options.timestampOf ? options.timestampOf(values[i] as T) : NO_TIMESTAMP);
          }
          position = end;
          return { kind: 'batch', batch: { values: out, timestamps, split: 'collection', offsets } };
        },
        currentSplits: () => [{ id: 'collection', position }],
        close() {},
      };
    },
  };
}
