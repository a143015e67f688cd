import { NonFiniteNumberError } from '../core/index.ts';

const HINT =
  'check the computation that produced it (an overflow, a division by zero) or validate the input field in the ' +
  "source's parse function, which sends bad records to the dead letters";

/**
 * JSON.stringify for sinks, refusing NaN and ±Infinity instead of writing null for them (NonFiniteNumberError
 * naming `operator` and the field). A non-finite number can only turn into a `null` token, so the value is
 * searched only when the text holds one: the usual record costs one string scan.
 */
export function finiteJson(value: unknown, operator: string): string {
  const text = JSON.stringify(value);
  if (text !== undefined && text.includes('null')) {
    const bad = findNonFinite(value, '$', 0);
    if (bad !== undefined) throw new NonFiniteNumberError(operator, bad.path, bad.value, HINT);
  }
  return text;
}

/** JSON.stringify nests at most this deep before it overflows the stack itself; cycles throw there first. */
const MAX_DEPTH = 10_000;

/** The first NaN or ±Infinity JSON.stringify would meet in `value`, with its path; undefined if there is none. */
export function findNonFinite(value: unknown, path: string, depth: number): { path: string; value: number } | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { path, value };
  if (typeof value !== 'object' || value === null || depth > MAX_DEPTH) return undefined;
  const json = (value as { toJSON?: unknown }).toJSON;
  if (typeof json === 'function') return findNonFinite((json as () => unknown).call(value), path, depth + 1);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = findNonFinite(value[i], `${path}[${i}]`, depth + 1);
      if (bad !== undefined) return bad;
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    const field = /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
    const bad = findNonFinite((value as Record<string, unknown>)[key], field, depth + 1);
    if (bad !== undefined) return bad;
  }
  return undefined;
}
