import { writeSync } from 'node:fs';
import { LatencyHistogram } from './histogram.ts';
import { listen } from './reports.ts';

/** `latency-result: samples=<n> p50=<ms> p99=<ms> p999=<ms> max=<ms>`: the job's last line (the harness parses it). */
export const RESULT_LINE = /^latency-result: samples=(\d+) p50=([\d.]+) p99=([\d.]+) p999=([\d.]+) max=([\d.]+)$/m;
/** `latency-throughput: <events/s>`: the last line of a run with rate 0. */
export const THROUGHPUT_LINE = /^latency-throughput: (\d+) events\/s$/m;

/** How long the process waits at exit for reports still in flight from finished threads. */
const LATE_MESSAGE_WAIT_MS = 2000;

const ms = (micros: number): string => (micros / 1000).toFixed(3);

/**
 * In the coordinating thread: adds up the sinks' histograms (or the sources' throughput reports) and prints the
 * result as the process's last line when it exits.
 */
export function collectLatency(mode: 'latency' | 'throughput', subtasks: number): void {
  const histogram = new LatencyHistogram();
  let histograms = 0;
  let events = 0;
  let seconds = 0;
  let throughputs = 0;
  const complete = (): boolean => (mode === 'latency' ? histograms : throughputs) >= subtasks;
  const channel = listen((message) => {
    if (message.kind === 'histogram') {
      histogram.add(message.data);
      histograms++;
    } else if (message.kind === 'throughput') {
      events += message.events;
      seconds = Math.max(seconds, message.seconds);
      throughputs++;
    }
    if (complete()) channel.close();
  });
  let waited = 0;
  process.on('beforeExit', () => {
    if (!complete() && waited < LATE_MESSAGE_WAIT_MS) {
      waited += 20;
      setTimeout(() => {}, 20);
    }
  });
  process.on('exit', () => {
    if (!complete()) {
      writeSync(2, `latency: no result (${mode === 'latency' ? histograms : throughputs} of ${subtasks} subtasks reported)\n`);
    } else if (mode === 'throughput') {
      writeSync(1, `latency-throughput: ${Math.round(events / Math.max(seconds, 0.001))} events/s\n`);
    } else {
      const p = (q: number) => ms(histogram.percentileMicros(q));
      writeSync(1, `latency-result: samples=${histogram.count} p50=${p(50)} p99=${p(99)} p999=${p(99.9)} max=${ms(histogram.maxMicros)}\n`);
    }
  });
}
