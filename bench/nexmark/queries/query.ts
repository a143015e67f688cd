import type { DataStream } from 'sluice';
import type { NexmarkEvent } from '../model.ts';

/**
 * A Nexmark query as a Sluice pipeline: from the stream of all events (timestamps and the reference watermarks
 * already assigned) to the query's result stream. The runner sends the result to a discarding sink, the tests
 * to a collect sink. `build` must be deterministic (every worker thread builds the same graph).
 */
export interface NexmarkQuery<R = unknown> {
  /** 'q0', 'q1', ... */
  readonly name: string;
  /** The reference name, e.g. 'Currency Conversion'. */
  readonly title: string;
  /** One line: what the query computes. */
  readonly description: string;
  build(events: DataStream<NexmarkEvent>): DataStream<R>;
}
