/** A binary min-heap of (time, key) pairs in two parallel arrays: timers without an object per timer. */
export class TimerHeap {
  private readonly times: number[] = [];
  private readonly keys: number[] = [];

  get size(): number {
    return this.times.length;
  }

  /** The earliest time; +Infinity when empty. */
  peekTime(): number {
    return this.times.length === 0 ? Number.POSITIVE_INFINITY : (this.times[0] as number);
  }

  push(time: number, key: number): void {
    const times = this.times;
    const keys = this.keys;
    let i = times.length;
    times.push(time);
    keys.push(key);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((times[parent] as number) <= time) break;
      times[i] = times[parent] as number;
      keys[i] = keys[parent] as number;
      i = parent;
    }
    times[i] = time;
    keys[i] = key;
  }

  /** Removes the earliest entry and returns its key (the heap must not be empty). */
  pop(): number {
    const times = this.times;
    const keys = this.keys;
    const top = keys[0] as number;
    const lastTime = times.pop() as number;
    const lastKey = keys.pop() as number;
    const n = times.length;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && (times[child + 1] as number) < (times[child] as number)) child++;
      if ((times[child] as number) >= lastTime) break;
      times[i] = times[child] as number;
      keys[i] = keys[child] as number;
      i = child;
    }
    times[i] = lastTime;
    keys[i] = lastKey;
    return top;
  }
}
