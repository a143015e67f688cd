import { writeSync } from 'node:fs';
import { BroadcastChannel } from 'node:worker_threads';

/**
 * The runner's measurement: from the first event any source subtask generates to the moment the last sink
 * subtask has received everything, whatever thread each runs on. Thread start-up and loading the job module are
 * outside it (the `sluice` summary line above it includes them). Tasks post to a BroadcastChannel named after the
 * process; the coordinating thread collects and prints the result as the process's last line.
 */
export type TimingMessage =
  | { readonly kind: 'source-start'; readonly at: number }
  | { readonly kind: 'sink-end'; readonly at: number; readonly records: number };

const CHANNEL = `sluice-nexmark-timing-${process.pid}`;

/** Wall-clock milliseconds with sub-millisecond precision, comparable across the threads of a process. */
export const wallClock = (): number => performance.timeOrigin + performance.now();

let outbound: BroadcastChannel | undefined;

/** Called by source and sink subtasks, in any thread. */
export function reportTiming(message: TimingMessage): void {
  if (outbound === undefined) {
    outbound = new BroadcastChannel(CHANNEL);
    // Never keeps a thread alive; the coordinating thread waits for late messages itself (see TimingCollector).
    outbound.unref();
  }
  outbound.postMessage(message);
}

export interface Measurement {
  readonly events: number;
  readonly seconds: number;
  readonly eventsPerSecond: number;
  /** CPU time of all threads of the process (user + system) over the measured interval. */
  readonly cpuSeconds: number;
}

/** `qN: <events> events in <seconds> s = <rate> events/s`: the runner's fixed last line. */
export function formatMeasurement(query: string, m: Measurement): string {
  return `${query}: ${m.events} events in ${m.seconds.toFixed(3)} s = ${Math.round(m.eventsPerSecond)} events/s`;
}

export const MEASUREMENT_LINE = /^(q\d+): (\d+) events in ([\d.]+) s = (\d+) events\/s$/m;

/**
 * The Nexmark suite's own metric, throughput per core = events / (cores used x time) = events per CPU-second, with
 * the CPU time of every thread of the process (tasks, coordinating thread, GC and compiler threads) over the
 * measured interval. Printed on stderr before the measurement line.
 */
export function formatCpuLine(query: string, m: Measurement): string {
  const perCpuSecond = Math.round(m.events / Math.max(m.cpuSeconds, 0.001));
  return `${query}: ${m.cpuSeconds.toFixed(3)} s of CPU (${(m.cpuSeconds / m.seconds).toFixed(2)} cores busy) = ${perCpuSecond} events per CPU-second`;
}

export const CPU_LINE = /^(q\d+): ([\d.]+) s of CPU \(([\d.]+) cores busy\) = (\d+) events per CPU-second$/m;

/** How long the process waits at exit for messages still in flight from finished threads. */
const LATE_MESSAGE_WAIT_MS = 2000;

/** Collects the tasks' reports in the coordinating thread and prints the measurement when the process exits. */
class TimingCollector {
  private readonly channel = new BroadcastChannel(CHANNEL);
  private firstStart = Number.POSITIVE_INFINITY;
  private lastSinkEnd = Number.NEGATIVE_INFINITY;
  private sinksEnded = 0;
  private waitedMs = 0;
  private cpuAtStart: NodeJS.CpuUsage | undefined;
  private cpuSeconds = 0;

  constructor(
    private readonly query: string,
    private readonly sinkSubtasks: number,
    private readonly expectedEvents: number,
  ) {
    this.channel.unref();
    this.channel.onmessage = (event: unknown) => this.receive((event as { data: TimingMessage }).data);
    process.on('beforeExit', () => {
      // Reports posted by threads that have already ended may not have been delivered yet: give them a moment.
      if (!this.complete && this.waitedMs < LATE_MESSAGE_WAIT_MS) {
        this.waitedMs += 20;
        setTimeout(() => {}, 20);
      }
    });
    process.on('exit', () => this.print());
  }

  get complete(): boolean {
    return this.sinksEnded >= this.sinkSubtasks && Number.isFinite(this.firstStart);
  }

  measurement(): Measurement | undefined {
    if (!this.complete) return undefined;
    const seconds = Math.max(this.lastSinkEnd - this.firstStart, 0.001) / 1000;
    // The source is bounded: it generates exactly the configured number of events.
    const events = this.expectedEvents;
    return { events, seconds, eventsPerSecond: events / seconds, cpuSeconds: this.cpuSeconds };
  }

  private receive(message: TimingMessage): void {
    if (message.kind === 'source-start') {
      this.cpuAtStart ??= process.cpuUsage();
      this.firstStart = Math.min(this.firstStart, message.at);
    } else {
      this.sinksEnded++;
      this.lastSinkEnd = Math.max(this.lastSinkEnd, message.at);
    }
    if (this.complete) {
      const used = process.cpuUsage(this.cpuAtStart);
      this.cpuSeconds = (used.user + used.system) / 1e6;
      this.channel.close();
    }
  }

  private print(): void {
    const m = this.measurement();
    if (m === undefined) {
      writeSync(2, `${this.query}: no measurement (the job did not finish: ${this.sinksEnded} of ${this.sinkSubtasks} sink subtasks ended)\n`);
      return;
    }
    writeSync(2, `${formatCpuLine(this.query, m)}\n`);
    writeSync(1, `${formatMeasurement(this.query, m)}\n`);
  }
}

let collector: TimingCollector | undefined;

/** Starts collecting in the coordinating thread (once per process; later calls are ignored). */
export function collectTiming(query: string, sinkSubtasks: number, expectedEvents: number): void {
  collector ??= new TimingCollector(query, sinkSubtasks, expectedEvents);
}
