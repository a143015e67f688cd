import {
  ConfigError,
  InvalidKeyError,
  isValidKey,
  MIN_WATERMARK,
  NO_TIMESTAMP,
  originAt,
  SluiceError,
  UserFunctionError,
  type Key,
  type RecordBatch,
} from '../../core/index.ts';
import type { ProcessJoinContext, ProcessJoinFunction } from '../../contracts/join-functions.ts';
import type { KeyedStateBackend } from '../../state/index.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';
import {
  BufferingCollector,
  ElementContext,
  keyedRuntimeContext,
  userFunctionError,
} from '../process/process-contexts.ts';
import type { InternalTimerService, Timer } from '../../state/timers/timer-service.ts';
import { fireTimerRounds, withBatchKeys } from '../read-ahead.ts';

/** The context handed to the join function, reused for every pair: the operator sets its fields before each call. */
class JoinPairContext<K extends Key> extends ElementContext implements ProcessJoinContext<K> {
  currentKey = '' as K;
  leftTimestamp = NO_TIMESTAMP;
  rightTimestamp = NO_TIMESTAMP;
}

/**
 * What the interval join and the regular join share: opening the function with keyed state, reading ahead the keys
 * of each batch and of each round of timers (KeyedStateBackend.prefetch; synchronous when the backend needs no
 * read), selecting and checking keys, calling the function for a pair with the right timestamps, one output batch
 * per input batch, watermark or wake-up, and error reporting that names the record's origin.
 */
export abstract class KeyedJoinBase<IN1, IN2, K extends Key, OUT> implements Operator<IN1 | IN2, OUT> {
  protected ctx!: OperatorContext;
  protected output!: Output<OUT>;
  protected backend!: KeyedStateBackend;
  protected timers!: InternalTimerService;
  protected watermark = MIN_WATERMARK;
  protected readonly collector = new BufferingCollector<OUT>();
  private pair!: JoinPairContext<K>;

  constructor(
    readonly name: string,
    private readonly fn: ProcessJoinFunction<IN1, IN2, OUT, K>,
    private readonly keySelector1: (value: IN1) => K,
    private readonly keySelector2: (value: IN2) => K,
  ) {}

  open(ctx: OperatorContext, output: Output<OUT>): void {
    const backend = ctx.keyedState;
    const timers = ctx.timers;
    if (backend === undefined || timers === undefined) {
      throw new ConfigError(`join "${this.name}" has no keyed state or timers: key both inputs (keyBy) before joining them`);
    }
    this.ctx = ctx;
    this.output = output;
    this.backend = backend;
    this.timers = timers;
    this.watermark = ctx.currentWatermark();
    this.pair = new JoinPairContext<K>(ctx.clock, this.collector as BufferingCollector<unknown>);
    this.pair.watermark = this.watermark;
    this.openState(backend);
    try {
      this.fn.open?.(keyedRuntimeContext(ctx, backend));
    } catch (err) {
      throw userFunctionError(ctx, this.name, undefined, err);
    }
  }

  /** Creates the operator's own state handles (before the function opens). */
  protected abstract openState(backend: KeyedStateBackend): void;

  processBatch(batch: RecordBatch<IN1 | IN2>, input: number): void | Promise<void> {
    const process = (): void => this.processInput(batch, input);
    return input === 0
      ? withBatchKeys(this.backend, batch.values as IN1[], this.keySelector1, process)
      : withBatchKeys(this.backend, batch.values as IN2[], this.keySelector2, process);
  }

  /** Processes one input batch (its keys are read ahead) and flushes what it produced. */
  protected abstract processInput(batch: RecordBatch<IN1 | IN2>, input: number): void;

  /** Reacts to the watermark (cleanup timers); output is flushed and the watermark forwarded afterwards. */
  protected abstract advanceWatermark(timestamp: number): void | Promise<void>;

  processWatermark(timestamp: number): void | Promise<void> {
    if (timestamp > this.watermark) {
      this.watermark = timestamp;
      this.pair.watermark = timestamp;
      let pending: void | Promise<void>;
      try {
        pending = this.advanceWatermark(timestamp);
      } catch (err) {
        throw this.timerFailure(err);
      }
      if (pending !== undefined) {
        return pending.then(
          () => this.forwardWatermark(timestamp),
          (err: unknown) => {
            throw this.timerFailure(err);
          },
        );
      }
    }
    this.forwardWatermark(timestamp);
  }

  private forwardWatermark(timestamp: number): void {
    this.flush();
    this.output.emitWatermark(timestamp);
  }

  private timerFailure(err: unknown): Error {
    this.discard();
    return err instanceof SluiceError ? err : new UserFunctionError(this.name, this.ctx.subtask, undefined, err);
  }

  /** Fires due timers round by round (fireTimerRounds) and emits each round's output. */
  protected fireTimers(pop: () => Timer[], handle: (due: readonly Timer[]) => void): void | Promise<void> {
    return fireTimerRounds(this.backend, pop, (due) => {
      handle(due);
      // Emit round by round: a watermark that fires millions of timers must not hold all their output.
      this.flush();
    });
  }

  close(): void {
    if (this.ctx === undefined) return;
    try {
      this.fn.close?.();
    } catch (err) {
      throw userFunctionError(this.ctx, this.name, undefined, err);
    }
  }

  /** Sets the backend's current key from the record; a selector's throw or an invalid key fails the record. */
  protected selectKey<V>(selector: (value: V) => K, value: V): K {
    const key = selector(value);
    if (!isValidKey(key)) {
      throw new InvalidKeyError(key);
    }
    this.backend.setCurrentKey(key);
    this.pair.currentKey = key;
    return key;
  }

  /** Calls the join function for one pair; what it collects gets the later of the two timestamps. */
  protected join(left: IN1, right: IN2, leftTimestamp: number, rightTimestamp: number): void {
    const pair = this.pair;
    const timestamp = leftTimestamp > rightTimestamp ? leftTimestamp : rightTimestamp;
    pair.leftTimestamp = leftTimestamp;
    pair.rightTimestamp = rightTimestamp;
    pair.timestamp = timestamp;
    this.collector.timestamp = timestamp;
    this.fn.processElement(left, right, pair, this.collector);
  }

  /** Drops what the failed batch produced and names the record it failed on. */
  protected failOnRecord(batch: RecordBatch<unknown>, index: number, err: unknown): Error {
    this.discard();
    // An invalid key is the key selector's fault: it gets the operator and the record like any other user error.
    const passThrough = err instanceof SluiceError && !(err instanceof InvalidKeyError);
    return passThrough ? err : new UserFunctionError(this.name, this.ctx.subtask, originAt(batch, index), err);
  }

  protected discard(): void {
    this.collector.discard();
  }

  protected flush(): void {
    this.collector.flush(this.output);
  }

  protected missingTimestamp(time: number, why: string): ConfigError {
    return new ConfigError(
      `join "${this.name}" ${why}, but a record has no valid timestamp (${time}); assign timestamps and ` +
        'watermarks (a WatermarkStrategy) to both inputs before the join',
    );
  }
}
