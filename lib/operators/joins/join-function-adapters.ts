import type { Key } from '../../core/index.ts';
import type { JoinFunction, ProcessJoinFunction, ProcessWindowJoinFunction } from '../../contracts/join-functions.ts';

/** A window join emitting fn(first, second) for every pair of the window (Flink's join: a cross product per key). */
export function windowJoinOfPairs<T1, T2, R, K extends Key>(fn: JoinFunction<T1, T2, R>): ProcessWindowJoinFunction<T1, T2, R, K> {
  return {
    process(_key, _ctx, firsts, seconds, out) {
      for (let i = 0; i < firsts.length; i++) {
        const first = firsts[i] as T1;
        for (let j = 0; j < seconds.length; j++) out.collect(fn(first, seconds[j] as T2));
      }
    },
  };
}

/** A process join function emitting fn(left, right) for each pair it is given. */
export function processJoinOfPairs<T1, T2, R, K extends Key>(fn: JoinFunction<T1, T2, R>): ProcessJoinFunction<T1, T2, R, K> {
  return {
    processElement(left, right, _ctx, out) {
      out.collect(fn(left, right));
    },
  };
}
