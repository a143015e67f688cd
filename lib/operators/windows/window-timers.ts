import type { Key } from '../../core/index.ts';
import type { Namespace } from '../../state/index.ts';
import type { InternalTimerService } from '../../state/timers/timer-service.ts';

/**
 * The window operator's timers in its one time domain. Processing-time timers also need a wake-up from the task:
 * this keeps the earliest one requested so that registering a later timer costs no call.
 */
export class WindowTimers {
  private wakeupAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly timers: InternalTimerService,
    private readonly isEventTime: boolean,
    private readonly requestWakeup: (time: number) => void,
  ) {}

  register(key: Key, namespace: Namespace, timestamp: number): void {
    if (this.isEventTime) {
      this.timers.registerEventTimeTimer(key, namespace, timestamp);
      return;
    }
    this.timers.registerProcessingTimeTimer(key, namespace, timestamp);
    if (timestamp < this.wakeupAt) {
      this.wakeupAt = timestamp;
      this.requestWakeup(timestamp);
    }
  }

  /**
   * The timers of one window: its fire timer at `maxTimestamp` and, with allowed lateness, its cleanup timer at
   * maxTimestamp + lateness. In event time a window the watermark has passed gets no fire timer: it fires on each
   * element instead (EventTimeTrigger).
   */
  registerWindow(key: Key, namespace: Namespace, maxTimestamp: number, lateness: number, watermark: number): void {
    if (!this.isEventTime) {
      this.register(key, namespace, maxTimestamp);
      return;
    }
    if (maxTimestamp > watermark) this.register(key, namespace, maxTimestamp);
    if (lateness > 0) this.register(key, namespace, maxTimestamp + lateness);
  }

  delete(key: Key, namespace: Namespace, timestamp: number): void {
    if (this.isEventTime) this.timers.deleteEventTimeTimer(key, namespace, timestamp);
    else this.timers.deleteProcessingTimeTimer(key, namespace, timestamp);
  }

  /**
   * Asks for a wake-up at the earliest pending processing-time timer. Called after every wake-up and on open
   * (restored timers): re-requesting is cheap and does not depend on how the task remembers earlier requests.
   */
  requestNextWakeup(): void {
    if (this.isEventTime) return;
    const next = this.timers.nextProcessingTime();
    this.wakeupAt = next ?? Number.POSITIVE_INFINITY;
    if (next !== undefined) this.requestWakeup(next);
  }
}
