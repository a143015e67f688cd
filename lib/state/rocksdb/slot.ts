import type { Namespace } from '../keyed-state.ts';

/** Namespaces compare like Map keys (SameValueZero): -0 equals 0 and NaN equals NaN. */
function same(a: unknown, b: unknown): boolean {
  return a === b || (a !== a && b !== b);
}

/**
 * The entries of one state for one key: namespace -> live value. A key rarely has more than a few namespaces
 * (windows or slices in flight), so a flat [namespace, value, ...] array searched linearly beats a Map in speed
 * and in heap per cached key (the cache holds many of them).
 */
export class Slot {
  /** [namespace, value, namespace, value, ...] in insertion order. */
  readonly items: unknown[] = [];

  get size(): number {
    return this.items.length >> 1;
  }

  private indexOf(namespace: Namespace): number {
    const items = this.items;
    for (let i = 0; i < items.length; i += 2) if (same(items[i], namespace)) return i;
    return -1;
  }

  get(namespace: Namespace): unknown {
    const i = this.indexOf(namespace);
    return i < 0 ? undefined : this.items[i + 1];
  }

  has(namespace: Namespace): boolean {
    return this.indexOf(namespace) >= 0;
  }

  set(namespace: Namespace, value: unknown): void {
    const i = this.indexOf(namespace);
    if (i < 0) this.items.push(namespace, value);
    else this.items[i + 1] = value;
  }

  delete(namespace: Namespace): boolean {
    const i = this.indexOf(namespace);
    if (i < 0) return false;
    this.items.splice(i, 2);
    return true;
  }
}
