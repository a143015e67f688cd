import { setImmediate as immediate } from 'node:timers/promises';

/**
 * Tasks sharing a thread hand control to each other through promises (microtasks); messages from other threads and
 * timers need a turn of the event loop. Every few elements a task yields one.
 */
export const YIELD_EVERY = 1;

export function yieldToEventLoop(): Promise<void> {
  return immediate();
}
