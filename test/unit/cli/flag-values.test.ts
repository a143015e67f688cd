import { describe, expect, it } from 'vitest';
import type { FlagSpecs } from '../../../lib/api/job.ts';
import { FlagValueError, parseFlagValues } from '../../../lib/cli/flag-values.ts';
import { ConfigError } from '../../../lib/core/index.ts';

const specs = {
  input: { type: 'string', required: true, description: 'input file' },
  mode: { type: 'string', choices: ['fast', 'exact'], default: 'exact', description: 'mode' },
  label: { type: 'string', description: 'optional label' },
  windowMs: { type: 'number', integer: true, min: 1, default: 10000, description: 'window' },
  ratio: { type: 'number', description: 'any number' },
  threshold: { type: 'number', min: 0.5, description: 'at least a half' },
  verbose: { type: 'boolean', description: 'talk more' },
  color: { type: 'boolean', default: true, description: 'colors' },
} as const satisfies FlagSpecs;

function problemsOf(raw: Record<string, string | boolean | undefined>): readonly string[] {
  try {
    parseFlagValues(specs, { input: 'in.jsonl', ...raw });
  } catch (err) {
    expect(err).toBeInstanceOf(FlagValueError);
    expect(err).toBeInstanceOf(ConfigError);
    return (err as FlagValueError).problems;
  }
  throw new Error('expected a FlagValueError');
}

describe('parseFlagValues', () => {
  it('applies defaults, switches default to false, and leaves out optional flags not given', () => {
    expect(parseFlagValues(specs, { input: 'in.jsonl' })).toEqual({
      input: 'in.jsonl',
      mode: 'exact',
      windowMs: 10000,
      verbose: false,
      color: true,
    });
  });

  it('converts numbers and keeps given values over defaults', () => {
    const values = parseFlagValues(specs, {
      input: 'x',
      mode: 'fast',
      label: 'run 1',
      windowMs: '500',
      ratio: '-2.5',
      threshold: '1e3',
      verbose: true,
      color: false,
    });
    expect(values).toEqual({ input: 'x', mode: 'fast', label: 'run 1', windowMs: 500, ratio: -2.5, threshold: 1000, verbose: true, color: false });
  });

  it('names the flag, the expectation and the value for a number that is not a number', () => {
    expect(problemsOf({ windowMs: 'abc' })).toEqual(['--window-ms must be an integer >= 1, got "abc"']);
    expect(problemsOf({ ratio: 'abc' })).toEqual(['--ratio must be a number, got "abc"']);
    expect(problemsOf({ threshold: '0.1' })).toEqual(['--threshold must be a number >= 0.5, got "0.1"']);
  });

  it('rejects non-integers, values below min, empty text, hex, Infinity and trailing junk', () => {
    for (const bad of ['1.5', '0', '-3', '', ' ', '0x10', 'Infinity', '12ms', '1,000']) {
      expect(problemsOf({ windowMs: bad })).toEqual([`--window-ms must be an integer >= 1, got ${JSON.stringify(bad)}`]);
    }
    expect(problemsOf({ windowMs: '9007199254740993' })).toHaveLength(1);
  });

  it('accepts surrounding whitespace and exponent notation for numbers', () => {
    expect(parseFlagValues(specs, { input: 'x', windowMs: ' 20 ', ratio: '.5' })).toMatchObject({ windowMs: 20, ratio: 0.5 });
  });

  it('reports a missing required flag with its description', () => {
    expect(problemsOf({ input: undefined })).toEqual(['missing required flag --input (input file)']);
    expect(problemsOf({ input: '' })).toEqual(['--input must not be empty']);
  });

  it('lists the allowed choices', () => {
    expect(problemsOf({ mode: 'slow' })).toEqual(['--mode must be one of "fast", "exact", got "slow"']);
  });

  it('reports every bad flag at once', () => {
    expect(problemsOf({ input: undefined, windowMs: 'x', mode: 'y' })).toHaveLength(3);
  });

  it('rejects a value given to a switch and a switch form given to a valued flag', () => {
    expect(problemsOf({ verbose: 'yes' })).toEqual(['--verbose is a switch and takes no value']);
    expect(problemsOf({ windowMs: true })).toEqual(['--window-ms needs a value: an integer >= 1']);
  });
});
