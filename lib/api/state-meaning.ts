import type { StateMeaning } from '../checkpoint/types.ts';
import type { WindowAssigner } from '../operators/windows/assigners.ts';
import type { AggregateFunction } from '../state/index.ts';

/**
 * What decides how a window operator's (or window join's) state reads: windows are stored by their bounds, so
 * another assigner or size finds no window under the restored keys; another accumulator reads restored
 * accumulators as if they were its own.
 */
export function windowMeaning(
  operator: string,
  assigner: WindowAssigner,
  allowedLatenessMs: number,
  extra: Record<string, string | number> = {},
): StateMeaning {
  const time = assigner.isEventTime ? 'event time' : 'processing time';
  const base = { operator, assigner: assigner.kind, time, allowedLatenessMs };
  switch (assigner.kind) {
    case 'tumbling':
      return { ...base, sizeMs: assigner.sizeMs, offsetMs: assigner.offsetMs, ...extra };
    case 'sliding':
      return { ...base, sizeMs: assigner.sizeMs, slideMs: assigner.slideMs, offsetMs: assigner.offsetMs, ...extra };
    case 'session':
      return { ...base, gapMs: assigner.gapMs, ...extra };
  }
}

/**
 * The shape of a new accumulator: `number`, `string`, `array`, `Map`, `object {count, total}` ... A restored
 * accumulator of another shape would be mangled by the new function (`"[object Object]9977"`). Only the shape of
 * `createAccumulator()`'s value is compared: a change inside it (a field's meaning) needs `.stateVersion(n)`.
 */
export function accumulatorShape(fn: AggregateFunction<unknown, unknown, unknown>): string {
  let value: unknown;
  try {
    value = fn.createAccumulator();
  } catch {
    // It fails again, with the operator named, when the job runs.
    return 'unknown';
  }
  return shapeOf(value);
}

function shapeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Map) return 'Map';
  if (value instanceof Set) return 'Set';
  if (value instanceof Date) return 'Date';
  if (typeof value !== 'object') return typeof value;
  return `object {${Object.keys(value).sort().join(', ')}}`;
}
