import { describe, expect, it } from 'vitest';
import type { FlagSpecs } from '../../../lib/api/job.ts';
import { RESERVED_FLAG_KEYS } from '../../../lib/cli/common-flags.ts';
import { checkFlagSpecs } from '../../../lib/cli/flag-specs.ts';
import { ConfigError } from '../../../lib/core/index.ts';

const check = (specs: unknown) => () => checkFlagSpecs('demo', specs as FlagSpecs, RESERVED_FLAG_KEYS);

describe('checkFlagSpecs', () => {
  it('accepts well-formed declarations', () => {
    expect(
      check({
        input: { type: 'string', required: true, description: 'in' },
        mode: { type: 'string', choices: ['a', 'b'], default: 'a', description: 'm' },
        windowMs: { type: 'number', integer: true, min: 1, default: 5, description: 'w' },
        dryRun: { type: 'boolean', default: false, description: 'd' },
      }),
    ).not.toThrow();
    expect(check({})).not.toThrow();
  });

  it('rejects keys that are not camelCase and keys of common flags', () => {
    expect(check({ 'max-delay': { type: 'number', description: 'x' } })).toThrow(/camelCase/);
    expect(check({ parallelism: { type: 'number', description: 'x' } })).toThrow(/--parallelism is a common flag/);
    expect(check({ maxParallelism: { type: 'number', description: 'x' } })).toThrow(/--max-parallelism is a common flag/);
    expect(check({ help: { type: 'boolean', description: 'x' } })).toThrow(ConfigError);
  });

  it('rejects defaults that do not fit the declaration', () => {
    expect(check({ n: { type: 'number', integer: true, default: 1.5, description: 'x' } })).toThrow(/default must be an integer/);
    expect(check({ n: { type: 'number', min: 2, default: 1, description: 'x' } })).toThrow(/below min 2/);
    expect(check({ n: { type: 'number', default: '3', description: 'x' } })).toThrow(/finite number/);
    expect(check({ s: { type: 'string', choices: ['a'], default: 'b', description: 'x' } })).toThrow(/not one of its choices/);
    expect(check({ s: { type: 'string', choices: [], description: 'x' } })).toThrow(/choices must not be empty/);
    expect(check({ b: { type: 'boolean', default: 'yes', description: 'x' } })).toThrow(/true or false/);
    expect(check({ s: { type: 'string', required: true, default: 'a', description: 'x' } })).toThrow(/required and has a default/);
  });

  it('rejects unknown types and a missing description, naming the job and every problem', () => {
    const run = check({ a: { type: 'date', description: 'x' }, b: { type: 'string' } });
    expect(run).toThrow(/job "demo" declares invalid flags/);
    expect(run).toThrow(/flag "a": type must be/);
    expect(run).toThrow(/flag "b": description must be a string/);
  });
});
