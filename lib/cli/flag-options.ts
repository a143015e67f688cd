import { Option } from 'commander';
import type { FlagSpec } from '../api/job.ts';
import { flagName } from './flag-names.ts';

/** Help text of a flag: its description, then whether it is required, its choices and its default. */
export function describeFlag(spec: FlagSpec): string {
  const notes: string[] = [];
  if (spec.type !== 'boolean' && spec.required === true) notes.push('required');
  if (spec.type === 'string' && spec.choices !== undefined) notes.push(`one of: ${spec.choices.join(', ')}`);
  if (spec.type === 'number' && (spec.integer === true || spec.min !== undefined)) {
    notes.push([spec.integer === true ? 'integer' : 'number', spec.min === undefined ? '' : ` >= ${spec.min}`].join(''));
  }
  if (spec.default !== undefined) notes.push(`default: ${JSON.stringify(spec.default)}`);
  return notes.length === 0 ? spec.description : `${spec.description} (${notes.join('; ')})`;
}

/**
 * The commander options of one flag. Values stay raw text (validated by parseFlagValues, which also applies
 * defaults), so commander neither converts nor defaults anything. A switch that defaults to true also gets
 * `--no-<name>`.
 */
export function flagOptions(key: string, spec: FlagSpec): Option[] {
  const name = flagName(key);
  const description = describeFlag(spec);
  switch (spec.type) {
    case 'boolean': {
      const on = new Option(`--${name}`, description);
      return spec.default === true ? [on, new Option(`--no-${name}`, `Turn off --${name}`)] : [on];
    }
    case 'number':
      return [new Option(`--${name} <number>`, description)];
    case 'string':
      return [new Option(`--${name} <${spec.choices === undefined ? 'value' : 'choice'}>`, description)];
  }
}
