import type { StreamElement } from '../../core/index.ts';

/**
 * The sending end of a bounded channel. `send` never blocks (emitting is synchronous); instead the task checks
 * `blocked` between input elements and awaits `awaitCapacity()`, which is how backpressure reaches the producer.
 */
export interface ChannelSender {
  send(element: StreamElement<unknown>): void;
  readonly blocked: boolean;
  awaitCapacity(): Promise<void>;
  /** Resolves once everything sent has left this thread (a task must not end before: its thread may be stopped). */
  flushed(): Promise<void>;
}

/** The receiving end. `poll` takes the next element if one is there; `setListener` is told when one arrives. */
export interface ChannelReceiver {
  poll(): StreamElement<unknown> | undefined;
  setListener(listener: () => void): void;
  /** Stop delivering (job cancelled). */
  close(): void;
}
