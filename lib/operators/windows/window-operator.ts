import { ConfigError, type Key, type OutputTag, type RecordBatch } from '../../core/index.ts';
import type { Operator, OperatorContext } from '../operator.ts';
import type { Output } from '../output.ts';
import { requireAllowedLateness } from './allowed-lateness.ts';
import { LateRecordRoute } from './late-record-route.ts';
import type { WindowAssigner } from './window-assigner.ts';
import { createWindowContents, type WindowFunctionSpec } from './window-contents.ts';
import { WindowLifecycle } from './window-lifecycle.ts';

export type { WindowFunctionSpec } from './window-contents.ts';

export interface WindowOperatorSpec<IN, K extends Key, OUT> {
  readonly name: string;
  readonly keySelector: (value: IN) => K;
  readonly assigner: WindowAssigner;
  /** Event time only: how long after a window's end it still accepts (and re-fires for) late elements. */
  readonly allowedLatenessMs: number;
  /** Late elements go here with their original timestamps; without a tag they are dropped and counted. */
  readonly lateDataTag?: OutputTag<IN> | undefined;
  readonly fn: WindowFunctionSpec<IN, K, OUT>;
}

export interface WindowOperator<IN, OUT> extends Operator<IN, OUT> {
  /** Late elements dropped because no late-data tag was set. */
  readonly droppedLateRecords: number;
}

/**
 * A keyed window operator with the semantics of Flink's WindowOperator and its default triggers
 * (EventTimeTrigger / ProcessingTimeTrigger):
 * - an element joins each of its windows that is not late (maxTimestamp + allowedLateness > watermark); one that
 *   joins none and is itself late goes to the late-data side output, or is dropped and counted;
 * - event-time windows fire when the watermark reaches end - 1, and again for every element added after that
 *   while they are within allowed lateness; their state is purged at end - 1 + allowedLateness;
 * - processing-time windows fire when the clock reaches end - 1, and all remaining ones fire at end of input;
 * - results carry the timestamp end - 1 and leave as one batch per input batch, watermark or wake-up.
 * Contents live in keyed state and timers in the timer service, so both are snapshotted per key group.
 *
 * Order caveat: sliding windows are computed from slices and sessions from merged state, so a reduce function
 * sees values, and a process function sees elements, grouped by slice or merged session rather than strictly
 * in arrival order. Reduce and aggregate-merge functions must be associative and commutative for results to be
 * independent of that, and (as for all state) must not mutate their inputs.
 */
export function createWindowOperator<IN, K extends Key, OUT>(
  spec: WindowOperatorSpec<IN, K, OUT>,
): WindowOperator<IN, OUT> {
  validateSpec(spec);
  return new KeyedWindowOperator(spec);
}

function validateSpec<IN, K extends Key, OUT>(spec: WindowOperatorSpec<IN, K, OUT>): void {
  const where = `window operator "${spec.name}"`;
  requireAllowedLateness(where, spec.assigner, spec.allowedLatenessMs, 'event-time window assigner');
  if (typeof spec.keySelector !== 'function') {
    throw new ConfigError(`${where}: keySelector must be a function returning the key of a record`);
  }
}

class KeyedWindowOperator<IN, K extends Key, OUT> extends WindowLifecycle<K, OUT> implements WindowOperator<IN, OUT> {
  private readonly late: LateRecordRoute<IN>;

  constructor(private readonly spec: WindowOperatorSpec<IN, K, OUT>) {
    const name = spec.name;
    const late = new LateRecordRoute(spec.lateDataTag);
    super({
      name,
      assigner: spec.assigner,
      allowedLatenessMs: spec.allowedLatenessMs,
      lateRoutes: [late],
      unkeyedMessage:
        `window operator "${name}" has no keyed state or timers: key the stream (keyBy) before windowing it`,
      missingTimestampError: (time) =>
        new ConfigError(
          `window operator "${name}" uses event time, but a record has no valid timestamp (${time}); assign ` +
            'timestamps and watermarks (a WatermarkStrategy) before the window, or use a processing-time window',
        ),
    });
    this.late = late;
  }

  open(ctx: OperatorContext, output: Output<OUT>): void {
    this.openWindows(ctx, output, (backend, env) => createWindowContents<IN, K, OUT>(this.spec.fn, backend, env));
  }

  processBatch(batch: RecordBatch<IN>): void | Promise<void> {
    return this.processInputBatch(batch, this.spec.keySelector, this.late);
  }
}
