import type { TimeWindow } from '../../contracts/functions.ts';

/**
 * What the window operator needs to know about an assigner. The operator switches on `kind` and reads the
 * parameters instead of calling `assignWindows` per record, so that the hot path allocates nothing.
 */
interface AssignerBase {
  /** Event time (timestamps and watermarks) or processing time (the task's clock). */
  readonly isEventTime: boolean;
  /** The windows an element with this timestamp (event time) or arrival time (processing time) belongs to. */
  assignWindows(timestamp: number): TimeWindow[];
}

export interface TumblingWindowAssigner extends AssignerBase {
  readonly kind: 'tumbling';
  readonly sizeMs: number;
  readonly offsetMs: number;
}

export interface SlidingWindowAssigner extends AssignerBase {
  readonly kind: 'sliding';
  readonly sizeMs: number;
  readonly slideMs: number;
  readonly offsetMs: number;
}

export interface SessionWindowAssigner extends AssignerBase {
  readonly kind: 'session';
  readonly gapMs: number;
}

export type WindowAssigner = TumblingWindowAssigner | SlidingWindowAssigner | SessionWindowAssigner;
