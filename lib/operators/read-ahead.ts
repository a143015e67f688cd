import { isValidKey, type Key } from '../core/index.ts';
import type { KeyedStateBackend } from '../state/index.ts';
import type { Timer } from '../state/timers/timer-service.ts';

/**
 * Asks the backend to read ahead the keys of a batch (KeyedStateBackend.prefetch), once per batch. Backends
 * without read-ahead (memory) cost nothing: no keys are computed. A selector that throws or returns an invalid key
 * is skipped here; processing the record reports it with the record's origin.
 */
export function prefetchBatchKeys<V>(
  backend: KeyedStateBackend,
  values: readonly V[],
  selector: (value: V) => Key,
): void | Promise<void> {
  if (backend.prefetch === undefined) return undefined;
  const keys: Key[] = [];
  for (let i = 0; i < values.length; i++) {
    let key: unknown;
    try {
      key = selector(values[i] as V);
    } catch {
      continue;
    }
    if (isValidKey(key)) keys.push(key);
  }
  return backend.prefetch(keys);
}

/** Runs `process` once the keys of `values` are read ahead; synchronously when the backend needs no read. */
export function withBatchKeys<V>(
  backend: KeyedStateBackend,
  values: readonly V[],
  selector: (value: V) => Key,
  process: () => void,
): void | Promise<void> {
  return afterwards(prefetchBatchKeys(backend, values, selector), process);
}

/** Read-ahead of the keys of timers about to fire. */
function prefetchTimerKeys(backend: KeyedStateBackend, timers: readonly Timer[]): void | Promise<void> {
  if (backend.prefetch === undefined) return undefined;
  const keys = new Array<Key>(timers.length);
  for (let i = 0; i < timers.length; i++) keys[i] = (timers[i] as Timer).key;
  return backend.prefetch(keys);
}

/**
 * Fires due timers round by round: pops a round (`pop`, until an empty one), reads ahead its keys and hands it to
 * `fire`. The result is a promise only when a read-ahead had to wait; a failed read is passed on as it is.
 */
export function fireTimerRounds(
  backend: KeyedStateBackend,
  pop: () => Timer[],
  fire: (due: readonly Timer[]) => void,
): void | Promise<void> {
  for (;;) {
    const due = pop();
    if (due.length === 0) return undefined;
    const pending = prefetchTimerKeys(backend, due);
    if (pending !== undefined) {
      return pending.then(() => {
        fire(due);
        return fireTimerRounds(backend, pop, fire);
      });
    }
    fire(due);
  }
}

/** Runs `next` after `pending`, synchronously when there is nothing to wait for. */
export function afterwards(pending: void | Promise<void>, next: () => void): void | Promise<void> {
  if (pending === undefined) next();
  else return pending.then(next);
}
