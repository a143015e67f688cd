import { ConfigError } from '../core/index.ts';
import type { Source } from '../connectors/source.ts';
import { LogicalGraph } from '../graph/logical-graph.ts';
import { compileJobOptions, type CompiledJobOptions, type JobOptions } from '../contracts/job-options.ts';
import { DataStream } from './streams.ts';
import type { WatermarkStrategy } from '../contracts/watermark-strategy.ts';
import { collectionSource, type CollectionSourceOptions } from '../connectors/local/collection-source.ts';

/**
 * Where a job is built: sources are added here, and every stream derived from them records its operators in the
 * environment's logical graph. Building is pure: running is the runner's job (`sluice run`, `runInThisThread`).
 */
export class StreamEnvironment {
  readonly graph = new LogicalGraph();
  readonly options: CompiledJobOptions;

  constructor(options: JobOptions = {}) {
    this.options = compileJobOptions(options);
  }

  /**
   * Adds a source. With a watermark strategy, each split gets its own timestamp assigner and watermark generator,
   * and the subtask's watermark is the minimum over its active splits.
   */
  fromSource<T>(source: Source<T>, watermarks?: WatermarkStrategy<T>, name: string = source.name): DataStream<T> {
    const node = this.graph.addSource(name, source as Source<unknown>, watermarks as WatermarkStrategy<unknown> | undefined);
    if (source.maxParallelism !== undefined && source.maxParallelism < this.options.parallelism) {
      node.parallelism = source.maxParallelism;
    }
    return new DataStream<T>(this, node.id, undefined, undefined);
  }

  /** A bounded source over values in memory (tests, examples); `batches` gives exact batch boundaries. */
  fromCollection<T>(values: readonly T[], options: CollectionSourceOptions<T> = {}): DataStream<T> {
    return this.fromSource(collectionSource(values, options), undefined, options.name ?? 'Collection');
  }

  /** Checks the graph before it runs: every stream ends somewhere, and parallelism settings fit. */
  validate(): void {
    if (this.graph.nodes.length === 0) throw new ConfigError('the job has no sources: add one with env.fromSource(...)');
    const sinks = this.graph.nodes.filter((n) => n.kind === 'operator' && n.isSink);
    if (sinks.length === 0) {
      throw new ConfigError('the job has no sink: end each pipeline with .sinkTo(sink) or .print()');
    }
  }
}
