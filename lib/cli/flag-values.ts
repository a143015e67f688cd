import { ConfigError } from '../core/index.ts';
import type { FlagSpec, FlagSpecs } from '../api/job.ts';
import { flagLabel } from './flag-names.ts';

/** A flag as the command-line parser left it: text for string and number flags, true/false for switches. */
export type RawFlagValue = string | boolean | undefined;
export type FlagValue = string | number | boolean;

/** One or more flags have bad values; `problems` has one sentence per flag. */
export class FlagValueError extends ConfigError {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
  }
}

type Checked = { ok: true; value: FlagValue } | { ok: false; problem: string };

function expectedNumber(spec: Extract<FlagSpec, { type: 'number' }>): string {
  const kind = spec.integer === true ? 'an integer' : 'a number';
  return spec.min === undefined ? kind : `${kind} >= ${spec.min}`;
}

/** Number('') is 0 and Number('0x10') is 16: accept plain decimal (and exponent) notation only. */
const NUMBER_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

function checkNumber(key: string, spec: Extract<FlagSpec, { type: 'number' }>, raw: string): Checked {
  const text = raw.trim();
  const value = NUMBER_TEXT.test(text) ? Number(text) : Number.NaN;
  const fits =
    Number.isFinite(value) && (spec.integer !== true || Number.isSafeInteger(value)) && (spec.min === undefined || value >= spec.min);
  return fits ? { ok: true, value } : { ok: false, problem: `${flagLabel(key)} must be ${expectedNumber(spec)}, got ${JSON.stringify(raw)}` };
}

function checkString(key: string, spec: Extract<FlagSpec, { type: 'string' }>, raw: string): Checked {
  if (spec.choices !== undefined && !spec.choices.includes(raw)) {
    const choices = spec.choices.map((c) => JSON.stringify(c)).join(', ');
    return { ok: false, problem: `${flagLabel(key)} must be one of ${choices}, got ${JSON.stringify(raw)}` };
  }
  if (spec.required === true && raw.length === 0) return { ok: false, problem: `${flagLabel(key)} must not be empty` };
  return { ok: true, value: raw };
}

function checkOne(key: string, spec: FlagSpec, raw: RawFlagValue): Checked | undefined {
  if (raw === undefined) {
    if (spec.default !== undefined) return { ok: true, value: spec.default };
    if (spec.type === 'boolean') return { ok: true, value: false };
    if (spec.required === true) return { ok: false, problem: `missing required flag ${flagLabel(key)} (${spec.description})` };
    return undefined;
  }
  switch (spec.type) {
    case 'boolean':
      return typeof raw === 'boolean' ? { ok: true, value: raw } : { ok: false, problem: `${flagLabel(key)} is a switch and takes no value` };
    case 'number':
      return typeof raw === 'string' ? checkNumber(key, spec, raw) : { ok: false, problem: `${flagLabel(key)} needs a value: ${expectedNumber(spec)}` };
    case 'string':
      return typeof raw === 'string' ? checkString(key, spec, raw) : { ok: false, problem: `${flagLabel(key)} needs a value` };
  }
}

/**
 * Turns raw command-line values into typed flags: applies defaults (switches default to false), checks required
 * flags, numbers, integers, minimums and choices. Reports every bad flag at once. Flags that are neither given
 * nor defaulted are absent from the result.
 */
export function parseFlagValues(specs: FlagSpecs, raw: Readonly<Record<string, RawFlagValue>>): Record<string, FlagValue> {
  const values: Record<string, FlagValue> = {};
  const problems: string[] = [];
  for (const [key, spec] of Object.entries(specs)) {
    const checked = checkOne(key, spec, raw[key]);
    if (checked === undefined) continue;
    if (checked.ok) values[key] = checked.value;
    else problems.push(checked.problem);
  }
  if (problems.length > 0) throw new FlagValueError(problems);
  return values;
}
