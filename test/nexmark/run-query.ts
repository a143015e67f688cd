import { StreamEnvironment, collectSink, runInThisThread } from '../../lib/index.ts';
import type { NexmarkOptions } from '../../bench/nexmark/config.ts';
import { nexmarkConfig } from '../../bench/nexmark/config.ts';
import { NexmarkGenerator } from '../../bench/nexmark/generator.ts';
import type { NexmarkEvent } from '../../bench/nexmark/model.ts';
import type { NexmarkQuery } from '../../bench/nexmark/queries/query.ts';
import { nexmarkEvents } from '../../bench/nexmark/source.ts';
import type { DataStream } from '../../lib/index.ts';
import type { CollectSink } from '../../lib/connectors/local/index.ts';

/** Every event of the stream, in position order (the batch computations' input). */
export function allEvents(options: NexmarkOptions): NexmarkEvent[] {
  const config = nexmarkConfig(options);
  const generator = new NexmarkGenerator(config);
  return Array.from({ length: config.events }, (_, position) => generator.eventAt(position));
}

/** Runs a pipeline over the generated events in this thread and returns the sink it wrote to. */
async function collectPipeline<R>(
  options: NexmarkOptions,
  parallelism: number,
  build: (events: DataStream<NexmarkEvent>) => DataStream<R>,
  sinkName?: string,
): Promise<CollectSink<R>> {
  const env = new StreamEnvironment({ parallelism });
  const sink = collectSink<R>(sinkName);
  build(nexmarkEvents(env, options)).sinkTo(sink);
  await runInThisThread(env);
  return sink;
}

/** Runs a pipeline over the generated events in this thread and returns what reached the sink. */
export async function runPipeline<R>(
  options: NexmarkOptions,
  parallelism: number,
  build: (events: DataStream<NexmarkEvent>) => DataStream<R>,
): Promise<R[]> {
  return (await collectPipeline(options, parallelism, build)).values;
}

export function runQuery<R>(query: NexmarkQuery<R>, options: NexmarkOptions, parallelism: number): Promise<R[]> {
  return runPipeline(options, parallelism, (events) => query.build(events));
}

/** Runs a query in this thread; each output record as `<JSON>@<its timestamp>`, sorted, so timestamps are compared too. */
export async function runQueryTimestamped<R>(query: NexmarkQuery<R>, options: NexmarkOptions, parallelism: number): Promise<string[]> {
  const sink = await collectPipeline(options, parallelism, (events) => query.build(events), query.name);
  return sink.values.map((row, i) => `${JSON.stringify(row)}@${sink.timestamps[i]}`).sort();
}

/** Order-independent comparison form: one JSON line per record (fields in a fixed order), sorted. */
export function canonical(records: readonly unknown[], fields: readonly string[]): string[] {
  return records
    .map((r) => JSON.stringify(fields.map((f) => (r as Record<string, unknown>)[f])))
    .sort();
}
