import type { Baseline } from './baseline.ts';

/** For the stateless queries: only processBatch does work, no watermark completes anything. */
export function stateless<R>(processBatch: Baseline<R>['processBatch']): Baseline<R> {
  return { processBatch, advanceWatermark() {} };
}
