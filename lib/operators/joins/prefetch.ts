import { isValidKey, type Key } from '../../core/index.ts';
import type { KeyedStateBackend } from '../../state/index.ts';
import type { Timer } from '../timer-service.ts';

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

/** Read-ahead of the keys of timers about to fire. */
export function prefetchTimerKeys(backend: KeyedStateBackend, timers: readonly Timer[]): void | Promise<void> {
  if (backend.prefetch === undefined) return undefined;
  const keys = new Array<Key>(timers.length);
  for (let i = 0; i < timers.length; i++) keys[i] = (timers[i] as Timer).key;
  return backend.prefetch(keys);
}
