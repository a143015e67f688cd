/**
 * Drives one operator directly, without tasks or channels: a fake OperatorContext backed by a real
 * MemoryKeyedStateBackend, HeapTimerService and ManualClock, and an Output that records everything emitted.
 *
 *   const h = await OperatorTestHarness.open(new KeyedProcessOperator('p', (v) => v.key, fn));
 *   await h.processElements([{ key: 'a' }, { key: 'b' }], [10, 20]);   // one batch on input 0
 *   await h.processWatermark(100);            // operator.processWatermark, or forwarded if it has none
 *   await h.setProcessingTime(5_000);         // moves the clock, delivers requested wake-ups (onProcessingTime)
 *   await h.finish();                         // final watermark (+Infinity) then endInput
 *   expect(h.output.values()).toEqual([...]); // also records(), timestamps(), batches, watermarks
 *   expect(h.output.sideValues(lateTag)).toEqual([...]);
 *   const snap = h.snapshot();                // keyed state + timers
 *   const h2 = await OperatorTestHarness.open(makeOperator(), { restoreFrom: snap });
 *
 * Options (all optional): `subtask`, `parallelism` (1), `maxParallelism` (128), `keyGroupRange` (derived from
 * subtask/parallelism), `keyed` (true: create backend + timers; false: both undefined, for non-keyed operators),
 * `processingTime` (initial clock, 0), `watermark` (initial currentWatermark, -Infinity), `restoreFrom` (one or
 * more HarnessSnapshots; keyed state and timers outside this subtask's key-group range are ignored, as on rescale).
 *
 * The harness behaves like a task: every hook's promise is awaited; `currentWatermark()` is updated before
 * processWatermark is called; processing-time wake-ups requested through the context are kept sorted and delivered
 * by setProcessingTime/advanceProcessingTime once the clock reaches them (one onProcessingTime(now) call per
 * round, repeated while the operator requests wake-ups that are already due).
 */
import {
  batchOf,
  DEFAULT_MAX_PARALLELISM,
  keyGroupRangeForSubtask,
  ManualClock,
  MAX_WATERMARK,
  MIN_WATERMARK,
  NO_TIMESTAMP,
  type KeyGroupRange,
  type OutputTag,
  type RecordBatch,
} from '../../lib/core/index.ts';
import { HeapTimerService, type TimerKeyGroupSnapshot } from '../../lib/state/timers/heap-timer-service.ts';
import type { Operator, OperatorContext } from '../../lib/operators/operator.ts';
import type { Output } from '../../lib/operators/output.ts';
import { MemoryKeyedStateBackend } from '../../lib/state/memory/memory-backend.ts';
import type { KeyedStateSnapshot } from '../../lib/state/index.ts';

export interface EmittedRecord<T> {
  value: T;
  timestamp: number;
}

/** Everything an operator emitted, in order. */
export type OutputEvent<T> =
  | { kind: 'batch'; batch: RecordBatch<T> }
  | { kind: 'side'; tag: string; batch: RecordBatch<unknown> }
  | { kind: 'watermark'; timestamp: number };

export class RecordingOutput<T> implements Output<T> {
  readonly batches: RecordBatch<T>[] = [];
  readonly watermarks: number[] = [];
  /** Side-output batches by tag id. */
  readonly sideBatches = new Map<string, RecordBatch<unknown>[]>();
  readonly events: OutputEvent<T>[] = [];

  emit(batch: RecordBatch<T>): void {
    this.batches.push(batch);
    this.events.push({ kind: 'batch', batch });
  }

  emitWatermark(timestamp: number): void {
    this.watermarks.push(timestamp);
    this.events.push({ kind: 'watermark', timestamp });
  }

  emitSide<S>(tag: OutputTag<S>, batch: RecordBatch<S>): void {
    let list = this.sideBatches.get(tag.id);
    if (list === undefined) {
      list = [];
      this.sideBatches.set(tag.id, list);
    }
    list.push(batch as RecordBatch<unknown>);
    this.events.push({ kind: 'side', tag: tag.id, batch: batch as RecordBatch<unknown> });
  }

  /** Main-output records of all batches, in emission order. */
  records(): EmittedRecord<T>[] {
    return flatten(this.batches);
  }

  values(): T[] {
    return this.records().map((r) => r.value);
  }

  timestamps(): number[] {
    return this.records().map((r) => r.timestamp);
  }

  sideRecords<S>(tag: OutputTag<S>): EmittedRecord<S>[] {
    return flatten((this.sideBatches.get(tag.id) ?? []) as RecordBatch<S>[]);
  }

  sideValues<S>(tag: OutputTag<S>): S[] {
    return this.sideRecords(tag).map((r) => r.value);
  }

  clear(): void {
    this.batches.length = 0;
    this.watermarks.length = 0;
    this.sideBatches.clear();
    this.events.length = 0;
  }
}

function flatten<T>(batches: readonly RecordBatch<T>[]): EmittedRecord<T>[] {
  const out: EmittedRecord<T>[] = [];
  for (const b of batches) {
    for (let i = 0; i < b.values.length; i++) out.push({ value: b.values[i] as T, timestamp: b.timestamps[i] as number });
  }
  return out;
}

/** Keyed state and timers of one harness, restorable into another (possibly with another key-group range). */
export interface HarnessSnapshot {
  keyedState: KeyedStateSnapshot | undefined;
  timers: TimerKeyGroupSnapshot[];
}

export interface OperatorTestOptions {
  subtask?: number;
  parallelism?: number;
  maxParallelism?: number;
  keyGroupRange?: KeyGroupRange;
  keyed?: boolean;
  processingTime?: number;
  watermark?: number;
  restoreFrom?: HarnessSnapshot | readonly HarnessSnapshot[];
}

const MAX_WAKEUP_ROUNDS = 10_000;

export class OperatorTestHarness<IN, OUT> {
  readonly output = new RecordingOutput<OUT>();
  readonly clock: ManualClock;
  readonly backend: MemoryKeyedStateBackend | undefined;
  readonly timers: HeapTimerService | undefined;
  readonly context: OperatorContext;
  private watermark: number;
  /** Requested, not yet delivered processing-time wake-ups, ascending, distinct. */
  private readonly wakeups: number[] = [];

  private constructor(
    readonly operator: Operator<IN, OUT>,
    options: OperatorTestOptions,
  ) {
    const subtask = options.subtask ?? 0;
    const parallelism = options.parallelism ?? 1;
    const maxParallelism = options.maxParallelism ?? DEFAULT_MAX_PARALLELISM;
    const keyGroupRange = options.keyGroupRange ?? keyGroupRangeForSubtask(subtask, parallelism, maxParallelism);
    this.clock = new ManualClock(options.processingTime ?? 0);
    this.watermark = options.watermark ?? MIN_WATERMARK;
    const keyed = options.keyed ?? true;
    const clock = this.clock;
    this.backend = keyed
      ? new MemoryKeyedStateBackend({ keyGroupRange, maxParallelism, now: () => clock.now() })
      : undefined;
    this.timers = keyed ? new HeapTimerService({ maxParallelism }) : undefined;
    const restoreFrom = options.restoreFrom === undefined ? [] : ([] as HarnessSnapshot[]).concat(options.restoreFrom);
    const keyedSnapshots = restoreFrom.flatMap((s) => (s.keyedState === undefined ? [] : [s.keyedState]));
    if (this.backend !== undefined && keyedSnapshots.length > 0) this.backend.restore(keyedSnapshots);
    if (this.timers !== undefined) for (const s of restoreFrom) this.timers.restore(s.timers, keyGroupRange);

    this.context = {
      operatorName: operator.name,
      subtask,
      parallelism,
      maxParallelism,
      keyGroupRange,
      clock,
      keyedState: this.backend,
      timers: this.timers,
      checkpointing: false,
    fencing: { attempt: 0, epoch: 0 },
    currentWatermark: () => this.watermark,
      requestProcessingTimeWakeup: (time: number) => this.requestWakeup(time),
    };
  }

  /** Creates the harness and opens the operator. */
  static async open<IN, OUT>(
    operator: Operator<IN, OUT>,
    options: OperatorTestOptions = {},
  ): Promise<OperatorTestHarness<IN, OUT>> {
    const harness = new OperatorTestHarness(operator, options);
    await operator.open?.(harness.context, harness.output);
    return harness;
  }

  get currentWatermark(): number {
    return this.watermark;
  }

  /** Wake-ups the operator requested that the clock has not reached yet. */
  pendingWakeups(): readonly number[] {
    return this.wakeups;
  }

  async processBatch(batch: RecordBatch<IN>, input = 0): Promise<void> {
    await this.operator.processBatch(batch, input);
  }

  /** One batch of `values`; timestamps default to NO_TIMESTAMP. */
  async processElements(values: IN[], timestamps?: number[], input = 0): Promise<void> {
    await this.processBatch(batchOf(values, timestamps ?? values.map(() => NO_TIMESTAMP)), input);
  }

  async processElement(value: IN, timestamp: number = NO_TIMESTAMP, input = 0): Promise<void> {
    await this.processBatch(batchOf([value], [timestamp]), input);
  }

  async processWatermark(timestamp: number): Promise<void> {
    this.watermark = timestamp;
    if (this.operator.processWatermark !== undefined) await this.operator.processWatermark(timestamp);
    else this.output.emitWatermark(timestamp);
  }

  async setProcessingTime(time: number): Promise<void> {
    this.clock.set(time);
    for (let round = 0; this.wakeups.length > 0 && (this.wakeups[0] as number) <= time; round++) {
      if (round >= MAX_WAKEUP_ROUNDS) throw new Error(`operator kept requesting wake-ups at or before ${time}`);
      while (this.wakeups.length > 0 && (this.wakeups[0] as number) <= time) this.wakeups.shift();
      await this.operator.onProcessingTime?.(time);
    }
  }

  async advanceProcessingTime(ms: number): Promise<void> {
    await this.setProcessingTime(this.clock.now() + ms);
  }

  async endInput(): Promise<void> {
    await this.operator.endInput?.();
  }

  /** What a task does at the end of bounded input: the final watermark, then endInput. */
  async finish(): Promise<void> {
    await this.processWatermark(MAX_WATERMARK);
    await this.endInput();
  }

  snapshot(): HarnessSnapshot {
    return { keyedState: this.backend?.snapshot(), timers: this.timers?.snapshot() ?? [] };
  }

  async close(): Promise<void> {
    await this.operator.close?.();
    this.backend?.dispose();
  }

  private requestWakeup(time: number): void {
    const w = this.wakeups;
    let i = 0;
    while (i < w.length && (w[i] as number) < time) i++;
    if (w[i] !== time) w.splice(i, 0, time);
  }
}
