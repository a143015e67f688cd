import { ConfigError, type Key, type OutputTag } from '../core/index.ts';
import type { Operator } from '../operators/operator.ts';
import type { WindowAssigner } from '../operators/windows/assigners.ts';
import { createWindowJoinOperator, validateWindowJoinSpec } from '../operators/joins/window-join-operator.ts';
import { IntervalJoinOperator, validateIntervalBounds } from '../operators/joins/interval-join-operator.ts';
import { processJoinOfPairs, windowJoinOfPairs } from '../operators/joins/join-function-adapters.ts';
import { RegularJoinOperator, validateRetention, type StateRetention } from '../operators/joins/regular-join-operator.ts';
import type { KeySelector } from '../contracts/functions.ts';
import type {
  JoinFunction,
  ProcessJoinFunction,
  ProcessWindowJoinFunction,
  RetentionTimeDomain,
} from '../contracts/join-functions.ts';
import type { DataStream, KeyByOptions, KeyedStream } from './streams.ts';
import { windowMeaning } from './state-meaning.ts';

type AnyOperator = Operator<unknown, unknown>;

/** Each subtask gets its own instance of a rich function (see perSubtask in streams.ts). */
function perSubtask<F extends object>(fn: F): F {
  return Object.create(fn) as F;
}

/**
 * A window join being built (Flink's JoinedStreams): `a.join(b).where(keyA).equalTo(keyB).window(assigner)`, then
 * `apply(joinFn)` or `process(windowJoinFn)`.
 */
export class JoinedStreams<T1, T2> {
  constructor(
    readonly first: DataStream<T1>,
    readonly second: DataStream<T2>,
  ) {}

  /** The key of the first input. `options` (keyBy's, e.g. `{ keyGroups: 'kinesis-hash' }`) apply to both inputs. */
  where<K extends Key>(keySelector: KeySelector<T1, K>, options?: KeyByOptions): JoinWhere<T1, T2, K> {
    return new JoinWhere(this.first, this.second, keySelector, options);
  }
}

export class JoinWhere<T1, T2, K extends Key> {
  constructor(
    private readonly first: DataStream<T1>,
    private readonly second: DataStream<T2>,
    private readonly firstKey: KeySelector<T1, K>,
    private readonly options: KeyByOptions | undefined,
  ) {}

  /** The key of the second input: records join when their keys are equal (same type and value). */
  equalTo(keySelector: KeySelector<T2, K>): JoinEqualTo<T1, T2, K> {
    return new JoinEqualTo(this.first.keyBy(this.firstKey, this.options), this.second.keyBy(keySelector, this.options));
  }
}

export class JoinEqualTo<T1, T2, K extends Key> {
  constructor(
    private readonly first: KeyedStream<T1, K>,
    private readonly second: KeyedStream<T2, K>,
  ) {}

  /** Records join when they share a key and a window of `assigner` (tumbling, sliding or session; event or processing time). */
  window(assigner: WindowAssigner): WindowJoin<T1, T2, K> {
    return new WindowJoin(this.first, this.second, assigner);
  }
}

/** A keyed, windowed join; finish it with apply or process. */
export class WindowJoin<T1, T2, K extends Key> {
  private lateness = 0;
  private leftLateTag: OutputTag<T1> | undefined;
  private rightLateTag: OutputTag<T2> | undefined;

  constructor(
    private readonly first: KeyedStream<T1, K>,
    private readonly second: KeyedStream<T2, K>,
    private readonly assigner: WindowAssigner,
  ) {}

  /** Keeps event-time windows this long after they fire; a late record re-fires its window's whole join. @default 0 */
  allowedLateness(ms: number): this {
    this.lateness = ms;
    return this;
  }

  /** Records of the first input too late for all their windows go to this side output instead of being dropped. */
  sideOutputLeftLateData(tag: OutputTag<T1>): this {
    this.leftLateTag = tag;
    return this;
  }

  /** Records of the second input too late for all their windows go to this side output instead of being dropped. */
  sideOutputRightLateData(tag: OutputTag<T2>): this {
    this.rightLateTag = tag;
    return this;
  }

  /** One output per pair (first, second) of a fired window; results carry the timestamp windowEnd - 1. */
  apply<R>(fn: JoinFunction<T1, T2, R>, name = 'WindowJoin'): DataStream<R> {
    return this.process<R>(windowJoinOfPairs<T1, T2, R, K>(fn), name);
  }

  /** All records of both inputs per key and fired window, when both inputs have some. */
  process<R>(fn: ProcessWindowJoinFunction<T1, T2, R, K>, name = 'WindowJoin'): DataStream<R> {
    validateWindowJoinSpec(name, this.assigner, this.lateness);
    const spec = {
      name,
      keySelector1: this.first.keySelector,
      keySelector2: this.second.keySelector,
      assigner: this.assigner,
      allowedLatenessMs: this.lateness,
      leftLateDataTag: this.leftLateTag,
      rightLateDataTag: this.rightLateTag,
      fn,
    };
    return this.first.addKeyed<R>(
      name,
      () => createWindowJoinOperator(spec) as AnyOperator,
      [this.first.edge(0), this.second.edge(1)],
      windowMeaning('window join', this.assigner, this.lateness),
    );
  }
}

/** An interval join being built (Flink's KeyedStream.IntervalJoin): `left.intervalJoin(right).between(lower, upper)`. */
export class IntervalJoin<T1, T2, K extends Key> {
  constructor(
    private readonly left: KeyedStream<T1, K>,
    private readonly right: KeyedStream<T2, K>,
  ) {}

  /**
   * A right record r joins a left record l of the same key when l.ts + lowerBoundMs <= r.ts <= l.ts + upperBoundMs
   * (both bounds inclusive unless made exclusive; either may be negative).
   */
  between(lowerBoundMs: number, upperBoundMs: number): IntervalJoined<T1, T2, K> {
    validateIntervalBounds('IntervalJoin', lowerBoundMs, upperBoundMs);
    return new IntervalJoined(this.left, this.right, lowerBoundMs, upperBoundMs);
  }
}

export class IntervalJoined<T1, T2, K extends Key> {
  private lowerExclusive = false;
  private upperExclusive = false;
  private leftLateTag: OutputTag<T1> | undefined;
  private rightLateTag: OutputTag<T2> | undefined;

  constructor(
    private readonly left: KeyedStream<T1, K>,
    private readonly right: KeyedStream<T2, K>,
    private readonly lowerBoundMs: number,
    private readonly upperBoundMs: number,
  ) {}

  lowerBoundExclusive(): this {
    this.lowerExclusive = true;
    return this;
  }

  upperBoundExclusive(): this {
    this.upperExclusive = true;
    return this;
  }

  /** Left records at or below the watermark when they arrive go to this side output instead of being dropped. */
  sideOutputLeftLateData(tag: OutputTag<T1>): this {
    this.leftLateTag = tag;
    return this;
  }

  /** Right records at or below the watermark when they arrive go to this side output instead of being dropped. */
  sideOutputRightLateData(tag: OutputTag<T2>): this {
    this.rightLateTag = tag;
    return this;
  }

  /** One output per matching pair, with the larger of the two timestamps. */
  apply<R>(fn: JoinFunction<T1, T2, R>, name = 'IntervalJoin'): DataStream<R> {
    return this.process<R>(processJoinOfPairs<T1, T2, R, K>(fn), name);
  }

  /** Calls `fn.processElement(left, right, ctx, out)` per matching pair; outputs carry the larger timestamp. */
  process<R>(fn: ProcessJoinFunction<T1, T2, R, K>, name = 'IntervalJoin'): DataStream<R> {
    const lowerBoundMs = this.lowerExclusive ? this.lowerBoundMs + 1 : this.lowerBoundMs;
    const upperBoundMs = this.upperExclusive ? this.upperBoundMs - 1 : this.upperBoundMs;
    validateIntervalBounds(name, lowerBoundMs, upperBoundMs);
    const spec = {
      name,
      keySelector1: this.left.keySelector,
      keySelector2: this.right.keySelector,
      lowerBoundMs,
      upperBoundMs,
      leftLateDataTag: this.leftLateTag,
      rightLateDataTag: this.rightLateTag,
    };
    return this.left.addKeyed<R>(
      name,
      () => new IntervalJoinOperator<T1, T2, K, R>({ ...spec, fn: perSubtask(fn) }) as AnyOperator,
      [this.left.edge(0), this.right.edge(1)],
      { operator: 'interval join', lowerBoundMs, upperBoundMs },
    );
  }
}

/**
 * A regular (unbounded) inner join being built, as Flink SQL's `a JOIN b ON a.k = b.k`:
 * `left.regularJoin(right).stateRetention(ms)?.apply(fn)`. Each record joins every record of the other input
 * buffered for its key, whenever it arrived.
 */
export class RegularJoin<T1, T2, K extends Key> {
  private retention: StateRetention | undefined;

  constructor(
    private readonly left: KeyedStream<T1, K>,
    private readonly right: KeyedStream<T2, K>,
  ) {}

  /**
   * Bounds the state: a buffered record stops being joinable, and is deleted, `ms` after its timestamp as measured
   * by the watermark ('event', the default: reproducible) or `ms` after it arrived by the task's clock
   * ('processing': Flink SQL's `table.exec.state.ttl`). Without it every record is kept for the life of the job.
   */
  stateRetention(ms: number, timeDomain: RetentionTimeDomain = 'event'): this {
    const retention = { ms, timeDomain };
    validateRetention('RegularJoin', retention);
    this.retention = retention;
    return this;
  }

  /** One output per matching pair, with the larger of the two timestamps. */
  apply<R>(fn: JoinFunction<T1, T2, R>, name = 'RegularJoin'): DataStream<R> {
    return this.process<R>(processJoinOfPairs<T1, T2, R, K>(fn), name);
  }

  /** Calls `fn.processElement(left, right, ctx, out)` per matching pair when the second of them arrives. */
  process<R>(fn: ProcessJoinFunction<T1, T2, R, K>, name = 'RegularJoin'): DataStream<R> {
    const spec = {
      name,
      keySelector1: this.left.keySelector,
      keySelector2: this.right.keySelector,
      retention: this.retention,
    };
    return this.left.addKeyed<R>(
      name,
      () => new RegularJoinOperator<T1, T2, K, R>({ ...spec, fn: perSubtask(fn) }) as AnyOperator,
      [this.left.edge(0), this.right.edge(1)],
      // Retention changes only when records expire, not how they are stored: not part of the meaning.
      { operator: 'regular join' },
    );
  }
}

/** Both inputs of a join must be built in the same environment. */
export function requireSameEnvironment(what: string, a: { env: unknown }, b: { env: unknown }): void {
  if (a.env !== b.env) throw new ConfigError(`${what}: both streams must come from the same environment`);
}
