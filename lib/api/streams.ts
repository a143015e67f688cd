import { ConfigError, type Key, type KeyGroupHash, type OutputTag } from '../core/index.ts';
import type { LogicalEdge, PartitionerSpec } from '../graph/logical-graph.ts';
import type { Operator } from '../operators/operator.ts';
import type { Sink } from '../connectors/sink.ts';
import { MapOperator } from '../operators/basic/map-operator.ts';
import { FilterOperator } from '../operators/basic/filter-operator.ts';
import { FlatMapOperator } from '../operators/basic/flat-map-operator.ts';
import { SinkOperator } from '../operators/basic/sink-operator.ts';
import { TimestampsAndWatermarksOperator } from '../operators/basic/timestamps-and-watermarks-operator.ts';
import { ProcessOperator } from '../operators/process/process-operator.ts';
import { CoProcessOperator } from '../operators/process/co-process-operator.ts';
import { KeyedProcessOperator } from '../operators/process/keyed-process-operator.ts';
import { KeyedCoProcessOperator } from '../operators/process/keyed-co-process-operator.ts';
import { createWindowOperator, type WindowOperatorSpec } from '../operators/windows/window-operator.ts';
import type { WindowAssigner } from '../operators/windows/assigners.ts';
import { printSink, type PrintSinkOptions } from '../connectors/local/print-sink.ts';
import type { AggregateFunction, ReduceFunction } from '../state/index.ts';
import { reducingState, type ReducingState } from '../state/index.ts';
import type { StreamEnvironment } from './environment.ts';
import type { StateMeaning } from '../checkpoint/types.ts';
import { accumulatorShape, windowMeaning } from './state-meaning.ts';
import type {
  CoProcessFunction,
  FilterFunction,
  FlatMapFunction,
  KeyedCoProcessFunction,
  KeyedProcessFunction,
  KeySelector,
  MapFunction,
  ProcessFunction,
  ProcessWindowFunction,
  WindowResult,
  WindowResultFunction,
} from '../contracts/functions.ts';
import type { WatermarkStrategy } from '../contracts/watermark-strategy.ts';
import { IntervalJoin, JoinedStreams, RegularJoin, requireSameEnvironment } from './joins.ts';

type AnyOperator = Operator<unknown, unknown>;

/**
 * Each subtask gets its own instance of a rich function: an object inheriting from the one the user passed, so
 * that state handles a function keeps on `this` (set in open) are per subtask, as with Flink's serialized copies.
 */
function perSubtask<F extends object>(fn: F): F {
  return Object.create(fn) as F;
}

/** A typed stream of records: each call adds an operator to the job and returns the stream it produces. */
export class DataStream<T> {
  /** @internal */
  constructor(
    readonly env: StreamEnvironment,
    readonly nodeId: number,
    /** Side output of the node this stream reads, if any. */
    readonly sideTag: string | undefined,
    /** Partitioning requested for the next edge (rebalance(), broadcast(), ...). */
    readonly partitioning: PartitionerSpec | undefined,
  ) {}

  /** @internal the edge from this stream into a new operator. */
  edge(inputIndex = 0, partitioner: PartitionerSpec | undefined = this.partitioning): LogicalEdge {
    return { from: this.nodeId, sideTag: this.sideTag, partitioner, inputIndex };
  }

  /** @internal */
  protected addOperator<R>(name: string, create: () => AnyOperator, inputs: LogicalEdge[], stateMeaning?: StateMeaning): DataStream<R> {
    const node = this.env.graph.addOperator(name, create, inputs, stateMeaning === undefined ? {} : { stateMeaning });
    return new DataStream<R>(this.env, node.id, undefined, undefined);
  }

  map<R>(fn: MapFunction<T, R>, name = 'Map'): DataStream<R> {
    return this.addOperator(name, () => new MapOperator(name, fn) as AnyOperator, [this.edge()]);
  }

  filter(fn: FilterFunction<T>, name = 'Filter'): DataStream<T> {
    return this.addOperator(name, () => new FilterOperator(name, fn) as AnyOperator, [this.edge()]);
  }

  flatMap<R>(fn: FlatMapFunction<T, R>, name = 'FlatMap'): DataStream<R> {
    return this.addOperator(name, () => new FlatMapOperator(name, fn) as AnyOperator, [this.edge()]);
  }

  process<R>(fn: ProcessFunction<T, R>, name = 'Process'): DataStream<R> {
    return this.addOperator(name, () => new ProcessOperator(name, perSubtask(fn)) as AnyOperator, [this.edge()]);
  }

  /** Assigns event timestamps and generates watermarks per subtask (see also env.fromSource(source, strategy)). */
  assignTimestampsAndWatermarks(strategy: WatermarkStrategy<T>, name = 'Timestamps/Watermarks'): DataStream<T> {
    return this.addOperator(name, () => new TimestampsAndWatermarksOperator(name, strategy) as AnyOperator, [this.edge()]);
  }

  /**
   * Partitions by key: records with the same key reach the same subtask, which holds that key's state.
   * `{ keyGroups: 'kinesis-hash' }`: the key is the record's Kinesis partition key, and key groups come from its MD5
   * hash key as Kinesis assigns shards, so a cluster slot reading its hash range needs no shuffle (docs/cluster.md).
   */
  keyBy<K extends Key>(keySelector: KeySelector<T, K>, options?: KeyByOptions): KeyedStream<T, K> {
    return new KeyedStream<T, K>(this, keySelector, compileKeyByOptions(options));
  }

  /** Merges streams of the same type. */
  union(...others: DataStream<T>[]): DataStream<T> {
    for (const other of others) {
      if (other.env !== this.env) throw new ConfigError('union: all streams must come from the same environment');
    }
    const inputs = [this, ...others].map((s) => s.edge(0));
    return this.addOperator('Union', () => new MapOperator<T, T>('Union', (v) => v) as AnyOperator, inputs);
  }

  /** Pairs this stream with another for a two-input process function. */
  connect<T2>(other: DataStream<T2>): ConnectedStreams<T, T2> {
    if (other.env !== this.env) throw new ConfigError('connect: both streams must come from the same environment');
    return new ConnectedStreams<T, T2>(this, other);
  }

  /**
   * Joins with another stream in windows (Flink's JoinedStreams):
   * `join(other).where(key1).equalTo(key2).window(assigner).apply((a, b) => result)`.
   */
  join<T2>(other: DataStream<T2>): JoinedStreams<T, T2> {
    requireSameEnvironment('join', this, other);
    return new JoinedStreams<T, T2>(this, other);
  }

  /** The records an operator sent to `tag` with ctx.output(tag, value) (or a window's late data). */
  getSideOutput<S>(tag: OutputTag<S>): DataStream<S> {
    return new DataStream<S>(this.env, this.nodeId, tag.id, undefined);
  }

  /** Distributes batches round-robin over the next operator's subtasks. */
  rebalance(): DataStream<T> {
    return new DataStream<T>(this.env, this.nodeId, this.sideTag, { kind: 'rebalance' });
  }

  /** Sends every record to every subtask of the next operator. */
  broadcast(): DataStream<T> {
    return new DataStream<T>(this.env, this.nodeId, this.sideTag, { kind: 'broadcast' });
  }

  /** Subtask i feeds subtask i of the next operator (requires equal parallelism). */
  forward(): DataStream<T> {
    return new DataStream<T>(this.env, this.nodeId, this.sideTag, { kind: 'forward' });
  }

  /** Sets the parallelism of the operator that produces this stream. */
  setParallelism(parallelism: number): this {
    if (!Number.isInteger(parallelism) || parallelism < 1) {
      throw new ConfigError(`setParallelism: expected a positive integer, got ${parallelism}`);
    }
    if (parallelism > this.env.options.maxParallelism) {
      throw new ConfigError(
        `setParallelism(${parallelism}) exceeds maxParallelism ${this.env.options.maxParallelism}: raise maxParallelism or lower the parallelism`,
      );
    }
    this.env.graph.node(this.nodeId).parallelism = parallelism;
    return this;
  }

  /**
   * Names the operator that produces this stream (shown in errors and metrics). A restore finds an operator's state
   * by its name (and its place among operators of the same name): name stateful operators, uniquely.
   */
  name(name: string): this {
    this.env.graph.node(this.nodeId).name = name;
    return this;
  }

  /**
   * Versions the state of the operator that produces this stream. Raise it when the state's meaning changes in a
   * way Sluice cannot see (a field of the accumulator now means something else): restoring a checkpoint taken
   * with another version is then refused instead of misread. @default unset (any checkpoint without one matches)
   */
  stateVersion(version: number): this {
    this.env.graph.node(this.nodeId).stateVersion = checkStateVersion(version);
    return this;
  }

  sinkTo(sink: Sink<T>, name: string = sink.name): DataStreamSink {
    const node = this.env.graph.addOperator(name, () => new SinkOperator(name, sink) as AnyOperator, [this.edge()], {
      isSink: true,
      sink: sink as Sink<unknown>,
      stateMeaning: { operator: 'sink' },
    });
    return new DataStreamSink(this.env, node.id);
  }

  /** Prints each record to stdout (prefixed with the subtask when parallel). */
  print(options?: PrintSinkOptions<T>): DataStreamSink {
    return this.sinkTo(printSink<T>(options), 'Print');
  }
}

/** The end of a pipeline. */
export class DataStreamSink {
  constructor(
    private readonly env: StreamEnvironment,
    readonly nodeId: number,
  ) {}

  setParallelism(parallelism: number): this {
    if (!Number.isInteger(parallelism) || parallelism < 1) {
      throw new ConfigError(`setParallelism: expected a positive integer, got ${parallelism}`);
    }
    this.env.graph.node(this.nodeId).parallelism = parallelism;
    return this;
  }

  name(name: string): this {
    this.env.graph.node(this.nodeId).name = name;
    return this;
  }

  /** Versions the sink's state (its transactions), as DataStream.stateVersion does. */
  stateVersion(version: number): this {
    this.env.graph.node(this.nodeId).stateVersion = checkStateVersion(version);
    return this;
  }
}

function checkStateVersion(version: number): number {
  if (!Number.isSafeInteger(version) || version < 0) {
    throw new ConfigError(`stateVersion must be a non-negative integer, got ${String(version)}`);
  }
  return version;
}

/** A stream partitioned by key: operators on it have keyed state and timers. */
/** Options of `keyBy`. */
export interface KeyByOptions {
  /**
   * How a key maps to its key group. `'kinesis-hash'`: floor(MD5(UTF-8 key) x maxParallelism / 2^128), the key read
   * as a Kinesis partition key (numbers as their decimal text), so key groups line up with shard hash-key ranges.
   * Used for routing, keyed state and timers of the keyed operator alike, and part of the plan fingerprint: a
   * checkpoint taken with one hash cannot be restored into a job with the other. @default 'murmur'
   */
  readonly keyGroups?: KeyGroupHash;
}

function compileKeyByOptions(options: KeyByOptions | undefined): KeyGroupHash {
  const hash = options?.keyGroups ?? 'murmur';
  if (hash !== 'murmur' && hash !== 'kinesis-hash') {
    throw new ConfigError(`keyBy: keyGroups must be 'murmur' or 'kinesis-hash', got ${JSON.stringify(hash)}`);
  }
  return hash;
}

export class KeyedStream<T, K extends Key> {
  constructor(
    readonly input: DataStream<T>,
    readonly keySelector: KeySelector<T, K>,
    /** How keys map to key groups. @default 'murmur' */
    readonly keyGroupHash: KeyGroupHash = 'murmur',
  ) {}

  /** @internal */
  edge(inputIndex = 0): LogicalEdge {
    const keySelector = this.keySelector as (v: unknown) => Key;
    // murmur edges stay exactly as before (no field), so existing plans keep their fingerprints.
    const partitioner: PartitionerSpec =
      this.keyGroupHash === 'murmur' ? { kind: 'hash', keySelector } : { kind: 'hash', keySelector, keyGroupHash: this.keyGroupHash };
    return this.input.edge(inputIndex, partitioner);
  }

  /** @internal */
  addKeyed<R>(name: string, create: () => AnyOperator, inputs: LogicalEdge[], stateMeaning: StateMeaning): DataStream<R> {
    const node = this.input.env.graph.addOperator(name, create, inputs, { keyed: true, stateMeaning });
    return new DataStream<R>(this.input.env, node.id, undefined, undefined);
  }

  process<R>(fn: KeyedProcessFunction<K, T, R>, name = 'KeyedProcess'): DataStream<R> {
    const keySelector = this.keySelector;
    return this.addKeyed(name, () => new KeyedProcessOperator(name, keySelector, perSubtask(fn)) as AnyOperator, [this.edge()], {
      operator: 'keyed process',
    });
  }

  /** Rolling reduce: emits the running result per key for every record. */
  reduce(fn: ReduceFunction<T>, name = 'Reduce'): DataStream<T> {
    const descriptor = reducingState<T>('rolling-reduce', fn);
    const keySelector = this.keySelector;
    const create = (): KeyedProcessFunction<K, T, T> => {
      let state!: ReducingState<T>;
      return {
        open(ctx) {
          state = ctx.getReducingState(descriptor);
        },
        processElement(value, _ctx, out) {
          state.add(value);
          out.collect(state.get() as T);
        },
      };
    };
    return this.addKeyed(name, () => new KeyedProcessOperator(name, keySelector, create()) as AnyOperator, [this.edge()], {
      operator: 'rolling reduce',
    });
  }

  window(assigner: WindowAssigner): WindowedStream<T, K> {
    return new WindowedStream<T, K>(this, assigner);
  }

  /** Two keyed streams with the same key type: state and timers are shared per key. */
  connect<T2>(other: KeyedStream<T2, K>): KeyedConnectedStreams<T, T2, K> {
    return new KeyedConnectedStreams<T, T2, K>(this, other);
  }

  /** Joins records of the same key whose timestamps are close: `intervalJoin(other).between(lower, upper).process(fn)`. */
  intervalJoin<T2>(other: KeyedStream<T2, K>): IntervalJoin<T, T2, K> {
    requireSameEnvironment('intervalJoin', this.input, other.input);
    return new IntervalJoin<T, T2, K>(this, other);
  }

  /** An unbounded inner join on the key (Flink SQL's regular join): `regularJoin(other).stateRetention(ms)?.apply(fn)`. */
  regularJoin<T2>(other: KeyedStream<T2, K>): RegularJoin<T, T2, K> {
    requireSameEnvironment('regularJoin', this.input, other.input);
    return new RegularJoin<T, T2, K>(this, other);
  }
}

/** Windows per key; finish with reduce, aggregate or process. */
export class WindowedStream<T, K extends Key> {
  private lateness = 0;
  private lateTag: OutputTag<T> | undefined;

  constructor(
    private readonly keyed: KeyedStream<T, K>,
    private readonly assigner: WindowAssigner,
  ) {}

  /** Keeps event-time windows open this long after they fire; late records update and re-fire them. @default 0 */
  allowedLateness(ms: number): this {
    if (!Number.isInteger(ms) || ms < 0) throw new ConfigError(`allowedLateness must be a whole number of milliseconds >= 0, got ${ms}`);
    this.lateness = ms;
    return this;
  }

  /** Records too late for every window they belong to go to this side output instead of being dropped. */
  sideOutputLateData(tag: OutputTag<T>): this {
    this.lateTag = tag;
    return this;
  }

  /** Incremental reduce; results are WindowResult {key, windowStart, windowEnd, value} unless `result` maps them. */
  reduce(fn: ReduceFunction<T>): DataStream<WindowResult<K, T>>;
  reduce<R>(fn: ReduceFunction<T>, result: WindowResultFunction<K, T, R>, name?: string): DataStream<R>;
  reduce<R>(fn: ReduceFunction<T>, result?: WindowResultFunction<K, T, R>, name = 'WindowReduce'): DataStream<R> {
    const mapResult = (result ?? defaultWindowResult) as WindowResultFunction<K, T, R>;
    return this.build<R>(name, { kind: 'reduce', reduce: fn, result: mapResult });
  }

  /** Incremental aggregation with a constant-size accumulator. */
  aggregate<ACC, V>(fn: AggregateFunction<T, ACC, V>): DataStream<WindowResult<K, V>>;
  aggregate<ACC, V, R>(fn: AggregateFunction<T, ACC, V>, result: WindowResultFunction<K, V, R>, name?: string): DataStream<R>;
  aggregate<ACC, V, R>(fn: AggregateFunction<T, ACC, V>, result?: WindowResultFunction<K, V, R>, name = 'WindowAggregate'): DataStream<R> {
    const mapResult = (result ?? defaultWindowResult) as WindowResultFunction<K, unknown, R>;
    return this.build<R>(name, { kind: 'aggregate', aggregate: fn as AggregateFunction<T, unknown, unknown>, result: mapResult });
  }

  /** All records of the window at once. */
  process<R>(fn: ProcessWindowFunction<T, R, K>, name = 'WindowProcess'): DataStream<R> {
    return this.build<R>(name, { kind: 'process', process: fn });
  }

  private build<R>(name: string, fn: WindowOperatorSpec<T, K, R>['fn']): DataStream<R> {
    if (this.lateness > 0 && !this.assigner.isEventTime) {
      throw new ConfigError('allowedLateness applies to event-time windows only; remove it or use an event-time assigner');
    }
    const spec: WindowOperatorSpec<T, K, R> = {
      name,
      keySelector: this.keyed.keySelector,
      assigner: this.assigner,
      allowedLatenessMs: this.lateness,
      lateDataTag: this.lateTag,
      fn,
    };
    const meaning = windowMeaning('window', this.assigner, this.lateness, {
      function: fn.kind,
      ...(fn.kind === 'aggregate' ? { accumulator: accumulatorShape(fn.aggregate) } : {}),
    });
    return this.keyed.addKeyed(name, () => createWindowOperator(spec) as AnyOperator, [this.keyed.edge()], meaning);
  }
}

function defaultWindowResult<K extends Key, V>(value: V, key: K, window: { start: number; end: number }): WindowResult<K, V> {
  return { key, windowStart: window.start, windowEnd: window.end, value };
}

export class ConnectedStreams<T1, T2> {
  constructor(
    readonly first: DataStream<T1>,
    readonly second: DataStream<T2>,
  ) {}

  process<R>(fn: CoProcessFunction<T1, T2, R>, name = 'CoProcess'): DataStream<R> {
    const node = this.first.env.graph.addOperator(
      name,
      () => new CoProcessOperator(name, perSubtask(fn)) as AnyOperator,
      [this.first.edge(0), this.second.edge(1)],
    );
    return new DataStream<R>(this.first.env, node.id, undefined, undefined);
  }

  /** Keys both inputs; the key types must match. `options` apply to both (see DataStream.keyBy). */
  keyBy<K extends Key>(key1: KeySelector<T1, K>, key2: KeySelector<T2, K>, options?: KeyByOptions): KeyedConnectedStreams<T1, T2, K> {
    return new KeyedConnectedStreams(this.first.keyBy(key1, options), this.second.keyBy(key2, options));
  }
}

export class KeyedConnectedStreams<T1, T2, K extends Key> {
  constructor(
    readonly first: KeyedStream<T1, K>,
    readonly second: KeyedStream<T2, K>,
  ) {}

  process<R>(fn: KeyedCoProcessFunction<K, T1, T2, R>, name = 'KeyedCoProcess'): DataStream<R> {
    const k1 = this.first.keySelector;
    const k2 = this.second.keySelector;
    return this.first.addKeyed(
      name,
      () => new KeyedCoProcessOperator(name, k1, k2, perSubtask(fn)) as AnyOperator,
      [this.first.edge(0), this.second.edge(1)],
      { operator: 'keyed co-process' },
    );
  }
}
