import type { Sink } from 'sluice';
import { wallClock } from '../nexmark/timing.ts';
import { LatencyHistogram } from './histogram.ts';
import type { LatencyRecord, WindowCount } from './record.ts';
import { listen, report } from './reports.ts';

/** Records now - intended emission time of every measured record, and reports the histogram at the end. */
export function recordLatencySink(): Sink<LatencyRecord> {
  return {
    name: 'latency',
    createWriter() {
      const histogram = new LatencyHistogram();
      return {
        write(batch) {
          const now = wallClock();
          for (const record of batch.values) if (record.measured) histogram.recordMillis(now - record.stamp);
        },
        finish() {
          report({ kind: 'histogram', data: histogram.data() });
        },
      };
    },
  };
}

interface Closing {
  /** Source subtasks that have reported the window closed. */
  reports: number;
  /** The latest of their wall times: the window is closed once every source's watermark has passed its end. */
  at: number;
  measured: boolean;
  /** Arrival times of results that came before the last report. */
  readonly waiting: number[];
}

/** How many closed windows are remembered (results of a window arrive together, right after it closes). */
const REMEMBERED_WINDOWS = 64;

/**
 * Records, for each window result of a measured window, its arrival time - the time the closing watermark left the
 * (last) source subtask. The sources' reports come over a BroadcastChannel and may arrive after the results.
 */
export function windowLatencySink(sourceSubtasks: number): Sink<WindowCount> {
  return {
    name: 'window-latency',
    createWriter() {
      const histogram = new LatencyHistogram();
      const windows = new Map<number, Closing>();
      const closingOf = (end: number): Closing => {
        let closing = windows.get(end);
        if (closing === undefined) {
          windows.set(end, (closing = { reports: 0, at: Number.NEGATIVE_INFINITY, measured: true, waiting: [] }));
          if (windows.size > REMEMBERED_WINDOWS) windows.delete(windows.keys().next().value as number);
        }
        return closing;
      };
      const channel = listen((message) => {
        if (message.kind !== 'closed') return;
        const closing = closingOf(message.end);
        closing.reports++;
        closing.at = Math.max(closing.at, message.at);
        closing.measured &&= message.measured;
        if (closing.reports === sourceSubtasks && closing.measured) {
          for (const arrival of closing.waiting) histogram.recordMillis(arrival - closing.at);
        }
        if (closing.reports === sourceSubtasks) closing.waiting.length = 0;
      });
      return {
        write(batch) {
          const now = wallClock();
          for (const result of batch.values) {
            const closing = closingOf(result.end);
            if (closing.reports < sourceSubtasks) closing.waiting.push(now);
            else if (closing.measured) histogram.recordMillis(now - closing.at);
          }
        },
        finish() {
          channel.close();
          report({ kind: 'histogram', data: histogram.data() });
        },
      };
    },
  };
}
