import type { TaskMetrics } from '../task-metrics.ts';
import type { CoordinatorMessage } from './protocol.ts';

/** How long a metrics request waits for the worker threads before answering with what it has. */
const METRICS_TIMEOUT_MS = 1000;

interface NotifyWaiter {
  readonly checkpointId: number;
  resolve(): void;
  reject(reason: Error): void;
}

interface MetricsRequest {
  readonly waiting: Set<number>;
  resolve(): void;
}

/**
 * What the coordinating thread knows of an attempt's worker threads beyond checkpoint acks: up to which checkpoint
 * each thread ran the completion hooks (sink commits), and the task counters each last reported.
 */
export class AttemptMonitor {
  private readonly notifiedUpTo: number[];
  private readonly metricsOf: TaskMetrics[][];
  private readonly done: boolean[];
  private waiters: NotifyWaiter[] = [];
  private readonly requests = new Map<number, MetricsRequest>();
  private nextRequestId = 1;
  private closedWith: Error | undefined;

  constructor(
    private readonly threads: number,
    private readonly send: (thread: number, message: CoordinatorMessage) => void,
  ) {
    this.notifiedUpTo = new Array<number>(threads).fill(0);
    this.metricsOf = Array.from({ length: threads }, () => []);
    this.done = new Array<boolean>(threads).fill(false);
  }

  onNotified(thread: number, checkpointId: number): void {
    this.notifiedUpTo[thread] = Math.max(this.notifiedUpTo[thread] ?? 0, checkpointId);
    const ready = this.waiters.filter((w) => this.allNotified(w.checkpointId));
    this.waiters = this.waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve();
  }

  onMetrics(thread: number, requestId: number, metrics: TaskMetrics[]): void {
    this.metricsOf[thread] = metrics;
    const request = this.requests.get(requestId);
    request?.waiting.delete(thread);
    if (request !== undefined && request.waiting.size === 0) request.resolve();
  }

  /** The thread reported its final counters; it answers no more requests. */
  onDone(thread: number, metrics: TaskMetrics[]): void {
    this.metricsOf[thread] = metrics;
    this.done[thread] = true;
    for (const request of this.requests.values()) {
      request.waiting.delete(thread);
      if (request.waiting.size === 0) request.resolve();
    }
  }

  /** Resolves once every thread ran the completion hooks of `checkpointId` (or a later checkpoint). */
  notified(checkpointId: number): Promise<void> {
    if (this.closedWith !== undefined) return Promise.reject(this.closedWith);
    if (this.allNotified(checkpointId)) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ checkpointId, resolve, reject }));
  }

  /** Every task's counters: fresh from each thread that answers within a second, else its last report. */
  async metrics(): Promise<TaskMetrics[]> {
    const waiting = new Set<number>();
    for (let t = 0; t < this.threads; t++) if (!this.done[t]) waiting.add(t);
    if (waiting.size > 0 && this.closedWith === undefined) {
      const requestId = this.nextRequestId++;
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.requests.set(requestId, { waiting, resolve });
        timer = setTimeout(resolve, METRICS_TIMEOUT_MS);
        for (const t of waiting) this.send(t, { type: 'metrics', requestId });
      });
      clearTimeout(timer);
      this.requests.delete(requestId);
    }
    return this.metricsOf.flat().map((m) => ({ ...m }));
  }

  /** The attempt ended: waiters for notifications fail with `reason`, metrics requests answer at once. */
  close(reason: Error): void {
    this.closedWith = reason;
    for (const w of this.waiters) w.reject(reason);
    this.waiters = [];
    for (const request of this.requests.values()) request.resolve();
  }

  private allNotified(checkpointId: number): boolean {
    return this.notifiedUpTo.every((id) => id >= checkpointId);
  }
}
