import { ConfigError } from '../core/index.ts';
import type { OperatorStateRecord, StateMeaning } from './types.ts';

/** The job's operators paired with the checkpoint's. */
export interface OperatorMatch {
  /** Each operator of the job that has a counterpart in the checkpoint: [job's, checkpoint's]. */
  readonly pairs: readonly (readonly [OperatorStateRecord, OperatorStateRecord])[];
  /** Stateful operators of the checkpoint the job no longer has. */
  readonly notRestored: readonly OperatorStateRecord[];
}

/**
 * Pairs operators by name, and among operators of the same name by their order in the job (as Flink pairs them
 * by uid): so adding or removing an operator elsewhere, or chaining differently, keeps every other pairing.
 */
export function matchOperators(recorded: readonly OperatorStateRecord[], current: readonly OperatorStateRecord[]): OperatorMatch {
  const old = new Map(keyed(recorded));
  const pairs: [OperatorStateRecord, OperatorStateRecord][] = [];
  for (const [key, record] of keyed(current)) {
    const before = old.get(key);
    if (before === undefined) continue;
    pairs.push([record, before]);
    old.delete(key);
  }
  return { pairs, notRestored: [...old.values()].filter((r) => r.stateful) };
}

function keyed(records: readonly OperatorStateRecord[]): [string, OperatorStateRecord][] {
  const seen = new Map<string, number>();
  return [...records]
    .sort((a, b) => a.nodeId - b.nodeId)
    .map((r) => {
      const n = seen.get(r.name) ?? 0;
      seen.set(r.name, n + 1);
      return [`${r.name}\u0000${n}`, r];
    });
}

export interface OperatorCheckOptions {
  /** What is restored, for messages: `checkpoint 12 in ./ck`, `savepoint /path`. */
  readonly what: string;
  /** `--allow-non-restored-state`: drop the state of operators the job no longer has. */
  readonly allowNonRestoredState: boolean;
}

/**
 * Refuses (ConfigError, exit 2) a restore whose paired operators read their state differently, naming each
 * operator and difference, and one that would drop the state of removed operators unless the user allows it.
 * Returns the warnings to log.
 */
export function checkOperatorMatch(match: OperatorMatch, options: OperatorCheckOptions): string[] {
  const differences = match.pairs.flatMap(([now, before]) => {
    if (!now.stateful && !before.stateful) return [];
    const diff = meaningDifferences(before.meaning, now.meaning);
    return diff.length === 0 ? [] : [`operator "${now.name}": ${diff.join('; ')}`];
  });
  if (differences.length > 0) {
    throw new ConfigError(
      `cannot restore ${options.what}: its state does not fit the job's operators:\n  ${differences.join('\n  ')}\n` +
        'restore it with the settings of the job that wrote it, or start without this state (--fresh)',
    );
  }
  if (match.notRestored.length === 0) return [];
  const names = match.notRestored.map((r) => `"${r.name}"${typeof r.meaning['operator'] === 'string' ? ` (${r.meaning['operator']})` : ''}`).join(', ');
  if (!options.allowNonRestoredState) {
    throw new ConfigError(
      `cannot restore ${options.what}: it has state of operators the job no longer has: ${names}. ` +
        'Pass --allow-non-restored-state to drop that state, or restore it with the job that wrote it (or start with --fresh)',
    );
  }
  return [`warning: --allow-non-restored-state: dropping the state of ${names} from ${options.what}`];
}

const LABELS: Readonly<Record<string, string>> = {
  operator: 'operator kind',
  assigner: 'window assigner',
  time: 'time',
  sizeMs: 'window size',
  slideMs: 'window slide',
  offsetMs: 'window offset',
  gapMs: 'session gap',
  allowedLatenessMs: 'allowed lateness',
  function: 'window function',
  accumulator: 'accumulator',
  lowerBoundMs: 'lower bound',
  upperBoundMs: 'upper bound',
  stateVersion: 'state version (stateVersion)',
  keyGroups: "key-group hash (keyBy's keyGroups)",
};

/** `window size 10000 ms in the checkpoint, 20000 ms in the job`, one per property that differs. */
export function meaningDifferences(before: StateMeaning, now: StateMeaning): string[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(now)])];
  return keys
    .filter((k) => before[k] !== now[k])
    .map((k) => `${LABELS[k] ?? k} ${show(k, before[k])} in the checkpoint, ${show(k, now[k])} in the job`);
}

function show(key: string, value: string | number | undefined): string {
  if (value === undefined) return key === 'keyGroups' ? 'murmur' : 'unset';
  if (typeof value === 'number' && key.endsWith('Ms')) return `${value} ms`;
  return String(value);
}
