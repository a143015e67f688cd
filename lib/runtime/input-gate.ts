import { CancelledError, type StreamElement } from '../core/index.ts';
import type { ChannelReceiver } from './channels/channel.ts';

export type GateEvent =
  | { readonly kind: 'element'; readonly channel: number; readonly element: StreamElement<unknown> }
  | { readonly kind: 'mail'; readonly run: () => void | Promise<void> };

/**
 * Multiplexes a task's input channels and its mailbox (processing-time callbacks) into one sequence of events, so
 * that every callback runs between elements, never in the middle of one. Channels are served round-robin.
 */
export class InputGate {
  private readonly mail: (() => void | Promise<void>)[] = [];
  private wake: (() => void) | undefined;
  private next = 0;
  private failure: unknown;
  /** Channels held back during barrier alignment: not polled until released. */
  private readonly blocked: boolean[];

  constructor(private readonly channels: readonly ChannelReceiver[]) {
    const notify = () => {
      const w = this.wake;
      if (w !== undefined) {
        this.wake = undefined;
        w();
      }
    };
    for (const ch of channels) ch.setListener(notify);
    this.notify = notify;
    this.blocked = channels.map(() => false);
  }

  setBlocked(channel: number, blocked: boolean): void {
    this.blocked[channel] = blocked;
    if (!blocked) this.notify();
  }

  private readonly notify: () => void;

  get channelCount(): number {
    return this.channels.length;
  }

  /** Queues a callback to run on the task between elements. */
  post(run: () => void | Promise<void>): void {
    this.mail.push(run);
    this.notify();
  }

  /** Makes a waiting or later `take` throw: the job is being cancelled. */
  fail(reason: unknown): void {
    this.failure = reason ?? new CancelledError();
    this.notify();
  }

  /** Next event without waiting, or undefined. */
  poll(): GateEvent | undefined {
    if (this.failure !== undefined) throw this.failure;
    const mail = this.mail.shift();
    if (mail !== undefined) return { kind: 'mail', run: mail };
    const n = this.channels.length;
    for (let k = 0; k < n; k++) {
      const channel = (this.next + k) % n;
      if (this.blocked[channel]) continue;
      const element = this.channels[channel]!.poll();
      if (element !== undefined) {
        this.next = (channel + 1) % n;
        return { kind: 'element', channel, element };
      }
    }
    return undefined;
  }

  async take(): Promise<GateEvent> {
    for (;;) {
      const event = this.poll();
      if (event !== undefined) return event;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Waits until an event is available or `ms` elapse (used by sources that have nothing to read right now). */
  async waitFor(ms: number): Promise<void> {
    if (this.mail.length > 0 || this.failure !== undefined) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  close(): void {
    for (const ch of this.channels) ch.close();
  }
}
