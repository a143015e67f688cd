import { ConfigError, type Key, type OutputTag, type RecordBatch } from '../../core/index.ts';
import type { ProcessWindowJoinFunction } from '../../contracts/join-functions.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';
import { requireAllowedLateness } from '../windows/allowed-lateness.ts';
import { LateRecordRoute } from '../windows/late-record-route.ts';
import type { WindowAssigner } from '../windows/window-assigner.ts';
import { WindowLifecycle } from '../windows/window-lifecycle.ts';
import { WindowJoinContents } from './window-join-contents.ts';

export interface WindowJoinSpec<IN1, IN2, K extends Key, OUT> {
  readonly name: string;
  readonly keySelector1: (value: IN1) => K;
  readonly keySelector2: (value: IN2) => K;
  readonly assigner: WindowAssigner;
  /** Event time only: how long after a window's end it still accepts (and re-fires for) late records. */
  readonly allowedLatenessMs: number;
  /** Records too late for all their windows go here; without a tag they are dropped and counted. */
  readonly leftLateDataTag?: OutputTag<IN1> | undefined;
  readonly rightLateDataTag?: OutputTag<IN2> | undefined;
  readonly fn: ProcessWindowJoinFunction<IN1, IN2, OUT, K>;
}

export interface WindowJoinOperator<IN1, IN2, OUT> extends Operator<IN1 | IN2, OUT> {
  /** Late records dropped because their input had no late-data tag. */
  readonly droppedLateRecords: number;
}

/**
 * Flink's window join (JoinedStreams ... window(assigner).apply): the records of both inputs with the same key
 * and in the same window are joined when the window fires. It is the window operator with two inputs: the same
 * window logic (tumbling and sliding windows by slicing, merging sessions, processing time, allowed lateness with
 * re-firing and purging) keeps both inputs' records side by side in one namespace, and a fired window in which
 * both inputs have records is passed to the join function. Sessions merge across both inputs, as in Flink, where
 * the two inputs are one tagged union. Results carry the timestamp end - 1. A window that re-fires for a late
 * record emits its whole join again (as Flink does).
 */
export function createWindowJoinOperator<IN1, IN2, K extends Key, OUT>(
  spec: WindowJoinSpec<IN1, IN2, K, OUT>,
): WindowJoinOperator<IN1, IN2, OUT> {
  validateWindowJoinSpec(spec.name, spec.assigner, spec.allowedLatenessMs);
  return new KeyedWindowJoinOperator(spec);
}

export function validateWindowJoinSpec(name: string, assigner: WindowAssigner, lateness: number): void {
  requireAllowedLateness(`window join "${name}"`, assigner, lateness, 'event-time assigner');
}

class KeyedWindowJoinOperator<IN1, IN2, K extends Key, OUT>
  extends WindowLifecycle<K, OUT>
  implements WindowJoinOperator<IN1, IN2, OUT>
{
  private readonly leftLate: LateRecordRoute<IN1>;
  private readonly rightLate: LateRecordRoute<IN2>;
  private contents!: WindowJoinContents<IN1, IN2, K, OUT>;
  // The contents learn which input the records being assigned come from.
  private readonly selectLeft = (): void => {
    this.contents.input = 0;
  };
  private readonly selectRight = (): void => {
    this.contents.input = 1;
  };

  constructor(private readonly spec: WindowJoinSpec<IN1, IN2, K, OUT>) {
    const name = spec.name;
    const leftLate = new LateRecordRoute(spec.leftLateDataTag);
    const rightLate = new LateRecordRoute(spec.rightLateDataTag);
    super({
      name,
      assigner: spec.assigner,
      allowedLatenessMs: spec.allowedLatenessMs,
      lateRoutes: [leftLate, rightLate],
      unkeyedMessage: `window join "${name}" has no keyed state or timers: key both inputs before joining them`,
      missingTimestampError: (time) =>
        new ConfigError(
          `window join "${name}" uses event time, but a record has no valid timestamp (${time}); assign ` +
            'timestamps and watermarks (a WatermarkStrategy) to both inputs before the join, ' +
            'or use a processing-time window',
        ),
    });
    this.leftLate = leftLate;
    this.rightLate = rightLate;
  }

  open(ctx: OperatorContext, output: Output<OUT>): void {
    this.openWindows(ctx, output, (backend, env) => {
      this.contents = new WindowJoinContents<IN1, IN2, K, OUT>(backend, this.spec.fn, env);
      return this.contents;
    });
  }

  processBatch(batch: RecordBatch<IN1 | IN2>, input: number): void | Promise<void> {
    return input === 0
      ? this.processInputBatch(batch as RecordBatch<IN1>, this.spec.keySelector1, this.leftLate, this.selectLeft)
      : this.processInputBatch(batch as RecordBatch<IN2>, this.spec.keySelector2, this.rightLate, this.selectRight);
  }
}
