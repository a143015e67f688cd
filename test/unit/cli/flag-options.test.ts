import { describe, expect, it } from 'vitest';
import { describeFlag, flagOptions } from '../../../lib/cli/flag-options.ts';

describe('flagOptions', () => {
  it('gives number and string flags a value placeholder and no commander default', () => {
    const [num] = flagOptions('maxDelayMs', { type: 'number', integer: true, min: 0, default: 5000, description: 'delay' });
    expect(num?.flags).toBe('--max-delay-ms <number>');
    expect(num?.attributeName()).toBe('maxDelayMs');
    expect(num?.defaultValue).toBeUndefined();
    const [str] = flagOptions('lateOutput', { type: 'string', description: 'late file' });
    expect(str?.flags).toBe('--late-output <value>');
    const [choice] = flagOptions('mode', { type: 'string', choices: ['a', 'b'], description: 'm' });
    expect(choice?.flags).toBe('--mode <choice>');
  });

  it('makes switches, with a --no- form when they default to true', () => {
    const off = flagOptions('dryRun', { type: 'boolean', description: 'd' });
    expect(off.map((o) => o.flags)).toEqual(['--dry-run']);
    const on = flagOptions('color', { type: 'boolean', default: true, description: 'c' });
    expect(on.map((o) => o.flags)).toEqual(['--color', '--no-color']);
    expect(on.map((o) => o.attributeName())).toEqual(['color', 'color']);
  });
});

describe('describeFlag', () => {
  it('adds required, choices, number constraints and the default to the description', () => {
    expect(describeFlag({ type: 'string', required: true, description: 'input file' })).toBe('input file (required)');
    expect(describeFlag({ type: 'string', choices: ['a', 'b'], default: 'a', description: 'm' })).toBe('m (one of: a, b; default: "a")');
    expect(describeFlag({ type: 'number', integer: true, min: 1, default: 10000, description: 'w' })).toBe('w (integer >= 1; default: 10000)');
    expect(describeFlag({ type: 'number', min: 0.5, description: 't' })).toBe('t (number >= 0.5)');
    expect(describeFlag({ type: 'boolean', description: 'v' })).toBe('v');
  });
});
