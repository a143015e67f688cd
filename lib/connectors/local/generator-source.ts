import { ConfigError } from '../../core/index.ts';
import type {
  PollResult,
  Source,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
  SplitEnumeratorContext,
} from '../source.ts';
import { CounterRandom, normalizeSeed } from './counter-random.ts';

/** The generator's default record. */
export interface Transaction {
  /** `a-<n>` with n in [0, keyCount). */
  account: string;
  /** 1..100000. */
  amountCents: number;
  /** Event time, epoch ms. */
  ts: number;
}

/**
 * Makes record `index`. `random` yields uniform numbers in [0, 1) from a stream that depends only on (seed,
 * index), so the record is the same at any parallelism; `eventTime` is the record's scheduled event time.
 */
export type RecordGenerator<T> = (index: number, random: () => number, eventTime: number) => T;

export interface GeneratorSourceOptions {
  /** Seed; the same seed gives the same multiset of records at any parallelism. Reduced to 32 bits. @default 0 */
  readonly seed?: number;
  /** Total number of records (bounded source). @default undefined (unbounded) */
  readonly count?: number;
  /** Throttle: records per second over all subtasks together. @default undefined (as fast as possible) */
  readonly ratePerSecond?: number;
  /** Number of distinct accounts of the default record. @default 1000 */
  readonly keyCount?: number;
  /** Event time of record 0, epoch ms. @default 0 */
  readonly startTime?: number;
  /** Event-time step between consecutive records. @default 1 */
  readonly eventIntervalMs?: number;
  /**
   * Each record's event time is moved back by a deterministic random amount in [0, maxOutOfOrdernessMs], so the
   * stream is out of order by at most that much. @default 0
   */
  readonly maxOutOfOrdernessMs?: number;
  /** Source name in the plan and in errors. @default 'generator' */
  readonly name?: string;
}

/** A stride of the index space: indices `partition + k * partitions`. */
export interface GeneratorSplit extends SourceSplit {
  readonly partition: number;
  readonly partitions: number;
  /** Next index to emit (≡ partition mod partitions). */
  readonly next: number;
}

interface CompiledGenerator<T> {
  readonly seed: number;
  readonly count: number;
  readonly ratePerSecond: number | undefined;
  readonly keyCount: number;
  readonly startTime: number;
  readonly eventIntervalMs: number;
  readonly maxOutOfOrdernessMs: number;
  readonly generate: RecordGenerator<T> | undefined;
}

function check(name: string, value: number | undefined, fallback: number, ok: (v: number) => boolean, what: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !ok(value)) throw new ConfigError(`generator source: ${name} must be ${what}, got ${value}`);
  return value;
}

const isNonNegativeInteger = (v: number): boolean => Number.isSafeInteger(v) && v >= 0;
const isPositiveInteger = (v: number): boolean => Number.isSafeInteger(v) && v > 0;

function compile<T>(options: GeneratorSourceOptions, generate: RecordGenerator<T> | undefined): CompiledGenerator<T> {
  return {
    seed: normalizeSeed(check('seed', options.seed, 0, Number.isFinite, 'a finite number')),
    count: check('count', options.count, Number.POSITIVE_INFINITY, isNonNegativeInteger, 'a non-negative integer'),
    ratePerSecond:
      options.ratePerSecond === undefined
        ? undefined
        : check('ratePerSecond', options.ratePerSecond, 0, (v) => Number.isFinite(v) && v > 0, 'a positive number'),
    keyCount: check('keyCount', options.keyCount, 1000, isPositiveInteger, 'a positive integer'),
    startTime: check('startTime', options.startTime, 0, Number.isFinite, 'a finite number'),
    eventIntervalMs: check('eventIntervalMs', options.eventIntervalMs, 1, (v) => Number.isFinite(v) && v >= 0, 'a non-negative number'),
    maxOutOfOrdernessMs: check('maxOutOfOrdernessMs', options.maxOutOfOrdernessMs, 0, isNonNegativeInteger, 'a non-negative integer'),
    generate,
  };
}

/** The generator source, with its split and reader types spelled out (handy when driving readers directly). */
export interface GeneratorSource<T> extends Source<T, GeneratorSplit> {
  createSplits(ctx: SplitEnumeratorContext): GeneratorSplit[];
  createReader(splits: GeneratorSplit[], ctx: SourceReaderContext): SourceReader<T, GeneratorSplit>;
}

/**
 * A deterministic generator: `Transaction` records by default, or `generate(index, random, eventTime)` records.
 * Records are dealt to splits by index (split p of P takes indices p, p+P, ...), each record depends only on
 * (seed, index). Batch timestamps are the records' event times; offsets are record indices.
 */
export function generatorSource<T>(
  options: GeneratorSourceOptions & { readonly generate: RecordGenerator<T> },
): GeneratorSource<T>;
export function generatorSource(options?: GeneratorSourceOptions): GeneratorSource<Transaction>;
export function generatorSource<T>(
  options: GeneratorSourceOptions & { readonly generate?: RecordGenerator<T> } = {},
): GeneratorSource<T> {
  const opts = compile<T>(options, options.generate);
  return {
    name: options.name ?? 'generator',
    bounded: Number.isFinite(opts.count),
    createSplits(ctx: SplitEnumeratorContext): GeneratorSplit[] {
      const partitions = Math.max(1, ctx.parallelism);
      return Array.from({ length: partitions }, (_, p) => ({
        id: `generator-${p}of${partitions}`,
        partition: p,
        partitions,
        next: p,
      }));
    },
    createReader(splits: GeneratorSplit[], ctx: SourceReaderContext): SourceReader<T, GeneratorSplit> {
      return new GeneratorReader(splits, ctx, opts);
    },
  };
}

/** Account names are cached up to this many keys; beyond, they are built per record. */
const ACCOUNT_CACHE_LIMIT = 1 << 20;
/** The throttle lets at most this much time's worth of records out at once after a pause. */
const BURST_MS = 100;

class GeneratorReader<T> implements SourceReader<T, GeneratorSplit> {
  private readonly splits: { split: GeneratorSplit; next: number }[];
  private readonly random = new CounterRandom();
  private readonly accounts: string[] = [];
  private readonly makeDefault: boolean;
  private cursor = 0;
  /** Token bucket of the throttle (per reader: its share of the global rate). */
  private readonly ratePerMs: number | undefined;
  private readonly burst: number;
  private tokens = 0;
  private lastRefill: number;

  constructor(
    splits: GeneratorSplit[],
    private readonly ctx: SourceReaderContext,
    private readonly opts: CompiledGenerator<T>,
  ) {
    this.splits = splits.map((split) => ({ split, next: split.next }));
    this.makeDefault = opts.generate === undefined;
    if (opts.ratePerSecond !== undefined && splits.length > 0) {
      const partitions = (splits[0] as GeneratorSplit).partitions;
      this.ratePerMs = (opts.ratePerSecond * splits.length) / partitions / 1000;
      this.burst = Math.max(1, this.ratePerMs * BURST_MS);
    } else {
      this.ratePerMs = undefined;
      this.burst = 0;
    }
    this.lastRefill = ctx.clock.now();
  }

  poll(maxRecords: number): PollResult<T> {
    const count = this.opts.count;
    while (this.splits.length > 0) {
      if (this.cursor >= this.splits.length) this.cursor = 0;
      const state = this.splits[this.cursor] as { split: GeneratorSplit; next: number };
      if (state.next >= count) {
        this.splits.splice(this.cursor, 1);
        continue;
      }
      let n = Math.max(1, maxRecords);
      const stride = state.split.partitions;
      if (Number.isFinite(count)) n = Math.min(n, Math.ceil((count - state.next) / stride));
      if (this.ratePerMs !== undefined) {
        const allowed = this.takeTokens(n);
        if (allowed === 0) {
          // Wait for a batch worth of tokens rather than one, so a throttled stream still moves in batches.
          const target = Math.min(n, this.burst);
          return { kind: 'wait', retryAfterMs: Math.max(1, Math.ceil((target - this.tokens) / this.ratePerMs)) };
        }
        n = allowed;
      }
      const values: T[] = new Array<T>(n);
      const timestamps: number[] = new Array<number>(n);
      const offsets: number[] = new Array<number>(n);
      let index = state.next;
      for (let i = 0; i < n; i++) {
        const ts = this.eventTime(index);
        values[i] = this.makeDefault ? (this.transaction(ts) as T) : (this.opts.generate as RecordGenerator<T>)(index, this.random.next, ts);
        timestamps[i] = ts;
        offsets[i] = index;
        index += stride;
      }
      state.next = index;
      if (this.splits.length > 1) this.cursor++;
      return { kind: 'batch', batch: { values, timestamps, split: state.split.id, offsets } };
    }
    return { kind: 'end' };
  }

  currentSplits(): GeneratorSplit[] {
    return this.splits.map(({ split, next }) => ({ ...split, next }));
  }

  close(): void {}

  /** Resets the random stream to record `index` and draws its event time first. */
  private eventTime(index: number): number {
    const opts = this.opts;
    this.random.reset(opts.seed, index);
    const base = opts.startTime + index * opts.eventIntervalMs;
    const jitterRange = opts.maxOutOfOrdernessMs;
    return jitterRange === 0 ? base : base - Math.floor(this.random.next() * (jitterRange + 1));
  }

  private transaction(ts: number): Transaction {
    const keyCount = this.opts.keyCount;
    const key = Math.floor(this.random.next() * keyCount);
    const amountCents = 1 + Math.floor(this.random.next() * 100000);
    let account: string;
    if (keyCount <= ACCOUNT_CACHE_LIMIT) account = this.accounts[key] ??= `a-${key}`;
    else account = `a-${key}`;
    return { account, amountCents, ts };
  }

  private takeTokens(wanted: number): number {
    const now = this.ctx.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + (now - this.lastRefill) * (this.ratePerMs as number));
    this.lastRefill = now;
    const n = Math.min(wanted, Math.floor(this.tokens));
    this.tokens -= n;
    return n;
  }
}
