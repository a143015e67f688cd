/** What the latency source emits: a key, the record's intended emission time and whether it is past the warm-up. */
export interface LatencyRecord {
  readonly key: number;
  /** Intended emission time, epoch ms (wall clock, comparable across the threads of a process). */
  readonly stamp: number;
  /** Emitted after the warm-up: counts in the measurement. */
  readonly measured: boolean;
}

/** A window pipeline result: records of one key in the window ending at `end` (event time = intended time). */
export interface WindowCount {
  readonly key: number;
  readonly count: number;
  readonly end: number;
}
