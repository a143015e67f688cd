import type { PollResult, Sink, Source, SourceReader, SourceSplit } from 'sluice';
import { reportTiming, wallClock } from './timing.ts';

/** The source, reporting when each subtask starts generating. */
export function timedSource<T, S extends SourceSplit>(source: Source<T, S>): Source<T, S> {
  return {
    ...source,
    async createReader(splits, ctx): Promise<SourceReader<T, S>> {
      const reader = await source.createReader(splits, ctx);
      let started = false;
      return {
        poll(maxRecords): Promise<PollResult<T>> | PollResult<T> {
          if (!started) {
            started = true;
            reportTiming({ kind: 'source-start', at: wallClock() });
          }
          return reader.poll(maxRecords);
        },
        currentSplits: (checkpointId) => reader.currentSplits(checkpointId),
        notifyCheckpointComplete: (checkpointId) => reader.notifyCheckpointComplete?.(checkpointId),
        close: () => reader.close(),
      };
    },
  };
}

/** Discards results (the reference's blackhole sink), reporting when each subtask has received all of its input. */
export function timedDiscardingSink<T>(): Sink<T> {
  return {
    name: 'discard',
    createWriter() {
      let records = 0;
      return {
        write(batch) {
          records += batch.values.length;
        },
        finish() {
          reportTiming({ kind: 'sink-end', at: wallClock(), records });
        },
      };
    },
  };
}
