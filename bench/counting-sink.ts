import type { Sink } from 'sluice';

/** Discards records, counting them, so that benchmarks measure the pipeline and not output I/O. */
export function countingSink<T>(): Sink<T> {
  return {
    name: 'count',
    createWriter() {
      let count = 0;
      return {
        write(batch) {
          count += batch.values.length;
        },
        finish() {
          if (process.env.SLUICE_BENCH_VERBOSE) process.stderr.write(`sink received ${count}\n`);
        },
      };
    },
  };
}
