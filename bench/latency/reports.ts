import { BroadcastChannel } from 'node:worker_threads';
import type { HistogramData } from './histogram.ts';

/**
 * What the tasks of a latency run tell each other and the coordinating thread, over a BroadcastChannel named after
 * the process (every thread of the process sees every message):
 * - `closed`: a source subtask's watermark has just passed the end of a window (wall time `at`);
 * - `histogram`: a sink subtask's latencies, at its end;
 * - `throughput`: a source subtask's measured events and seconds, at its end (unthrottled runs).
 */
export type LatencyMessage =
  | { readonly kind: 'closed'; readonly end: number; readonly at: number; readonly measured: boolean }
  | { readonly kind: 'histogram'; readonly data: HistogramData }
  | { readonly kind: 'throughput'; readonly events: number; readonly seconds: number };

export const CHANNEL = `sluice-latency-${process.pid}`;

let outbound: BroadcastChannel | undefined;

export function report(message: LatencyMessage): void {
  if (outbound === undefined) {
    outbound = new BroadcastChannel(CHANNEL);
    outbound.unref();
  }
  outbound.postMessage(message);
}

/** Listens to the run's messages in this thread; never keeps the thread alive. */
export function listen(onMessage: (message: LatencyMessage) => void): BroadcastChannel {
  const channel = new BroadcastChannel(CHANNEL);
  channel.unref();
  channel.onmessage = (event: unknown) => onMessage((event as { data: LatencyMessage }).data);
  return channel;
}
