import type { Key } from '../../core/index.ts';
import type { Namespace } from '../index.ts';
import type { Timer } from './timer-service.ts';

/**
 * Timers of one time domain. Many timers share few timestamps (window ends), so timers are grouped into one bucket
 * per distinct timestamp and only buckets sit in the binary min-heap. A bucket dedupes on (key, namespace) without
 * building string keys: key -> Timer while a key has one namespace at that timestamp (the common case), upgraded
 * to key -> namespace -> Timer on the second one. `order` keeps registration order for firing.
 */
interface Bucket {
  readonly timestamp: number;
  heapIndex: number;
  readonly byKey: Map<Key, Timer | Map<Namespace, Timer>>;
  readonly order: Set<Timer>;
}

export class TimerQueue {
  private readonly buckets = new Map<number, Bucket>();
  private readonly heap: Bucket[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Earliest pending timestamp. */
  peek(): number | undefined {
    return this.heap[0]?.timestamp;
  }

  /** Adds the timer unless an equal one is pending; returns whether it was added. */
  add(key: Key, namespace: Namespace, timestamp: number): boolean {
    let bucket = this.buckets.get(timestamp);
    if (bucket === undefined) {
      bucket = { timestamp, heapIndex: this.heap.length, byKey: new Map(), order: new Set() };
      this.buckets.set(timestamp, bucket);
      this.heap.push(bucket);
      this.siftUp(bucket.heapIndex);
    }
    const existing = bucket.byKey.get(key);
    let timer: Timer;
    if (existing === undefined) {
      timer = { timestamp, key, namespace };
      bucket.byKey.set(key, timer);
    } else if (existing instanceof Map) {
      if (existing.has(namespace)) return false;
      timer = { timestamp, key, namespace };
      existing.set(namespace, timer);
    } else {
      if (existing.namespace === namespace) return false;
      timer = { timestamp, key, namespace };
      bucket.byKey.set(
        key,
        new Map<Namespace, Timer>([
          [existing.namespace, existing],
          [namespace, timer],
        ]),
      );
    }
    bucket.order.add(timer);
    this.count++;
    return true;
  }

  /** Removes the timer if pending; returns whether it was. */
  delete(key: Key, namespace: Namespace, timestamp: number): boolean {
    const bucket = this.buckets.get(timestamp);
    if (bucket === undefined) return false;
    const existing = bucket.byKey.get(key);
    if (existing === undefined) return false;
    let timer: Timer | undefined;
    if (existing instanceof Map) {
      timer = existing.get(namespace);
      if (timer === undefined) return false;
      existing.delete(namespace);
      if (existing.size === 0) bucket.byKey.delete(key);
    } else {
      if (existing.namespace !== namespace) return false;
      timer = existing;
      bucket.byKey.delete(key);
    }
    bucket.order.delete(timer);
    this.count--;
    if (bucket.order.size === 0) this.removeBucket(bucket);
    return true;
  }

  /** Removes the timers with timestamp <= `limit` and appends them to `out` in firing order. */
  popUpTo(limit: number, out: Timer[]): void {
    for (;;) {
      const top = this.heap[0];
      if (top === undefined || top.timestamp > limit) return;
      this.removeBucket(top);
      for (const timer of top.order) out.push(timer);
      this.count -= top.order.size;
    }
  }

  /** All pending timers in firing order (for snapshots). */
  toSortedArray(): Timer[] {
    const buckets = this.heap.slice().sort((a, b) => a.timestamp - b.timestamp);
    const out: Timer[] = [];
    for (const bucket of buckets) for (const timer of bucket.order) out.push(timer);
    return out;
  }

  clear(): void {
    this.buckets.clear();
    this.heap.length = 0;
    this.count = 0;
  }

  private removeBucket(bucket: Bucket): void {
    this.buckets.delete(bucket.timestamp);
    const heap = this.heap;
    const last = heap.pop() as Bucket;
    if (last !== bucket) {
      const index = bucket.heapIndex;
      heap[index] = last;
      last.heapIndex = index;
      this.siftDown(index);
      this.siftUp(last.heapIndex);
    }
  }

  private siftUp(index: number): void {
    const heap = this.heap;
    const bucket = heap[index] as Bucket;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex] as Bucket;
      if (parent.timestamp <= bucket.timestamp) break;
      heap[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    heap[index] = bucket;
    bucket.heapIndex = index;
  }

  private siftDown(index: number): void {
    const heap = this.heap;
    const n = heap.length;
    const bucket = heap[index] as Bucket;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (right < n && (heap[right] as Bucket).timestamp < (heap[left] as Bucket).timestamp) child = right;
      const childBucket = heap[child] as Bucket;
      if (childBucket.timestamp >= bucket.timestamp) break;
      heap[index] = childBucket;
      childBucket.heapIndex = index;
      index = child;
    }
    heap[index] = bucket;
    bucket.heapIndex = index;
  }
}
