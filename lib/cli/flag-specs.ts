import { ConfigError } from '../core/index.ts';
import type { FlagSpec, FlagSpecs } from '../api/job.ts';
import { flagLabel, isValidFlagKey } from './flag-names.ts';

function problemsOf(key: string, spec: FlagSpec, reserved: ReadonlySet<string>): string[] {
  const where = `flag "${key}"`;
  if (!isValidFlagKey(key)) return [`${where}: keys must be camelCase identifiers such as "maxDelayMs" (used as --max-delay-ms)`];
  if (reserved.has(key)) return [`${where}: ${flagLabel(key)} is a common flag of "sluice run"; rename the job flag`];
  if (typeof spec !== 'object' || spec === null) return [`${where}: expected an object { type, description, ... }`];
  const problems: string[] = [];
  if (typeof spec.description !== 'string') problems.push(`${where}: description must be a string`);
  if ('required' in spec && spec.required === true && spec.default !== undefined) {
    problems.push(`${where}: is required and has a default; drop one of them`);
  }
  switch (spec.type) {
    case 'string':
      if (spec.default !== undefined && typeof spec.default !== 'string') problems.push(`${where}: default must be a string`);
      if (spec.choices !== undefined) {
        if (spec.choices.length === 0) problems.push(`${where}: choices must not be empty`);
        else if (spec.default !== undefined && !spec.choices.includes(spec.default)) {
          problems.push(`${where}: default "${spec.default}" is not one of its choices`);
        }
      }
      break;
    case 'number':
      if (spec.min !== undefined && !Number.isFinite(spec.min)) problems.push(`${where}: min must be a finite number`);
      if (spec.default !== undefined) {
        if (typeof spec.default !== 'number' || !Number.isFinite(spec.default)) problems.push(`${where}: default must be a finite number`);
        else if (spec.integer === true && !Number.isInteger(spec.default)) problems.push(`${where}: default must be an integer`);
        else if (spec.min !== undefined && spec.default < spec.min) problems.push(`${where}: default ${spec.default} is below min ${spec.min}`);
      }
      break;
    case 'boolean':
      if (spec.default !== undefined && typeof spec.default !== 'boolean') problems.push(`${where}: default must be true or false`);
      break;
    default:
      problems.push(`${where}: type must be "string", "number" or "boolean", got ${JSON.stringify((spec as { type: unknown }).type)}`);
  }
  return problems;
}

/**
 * Checks a job's flag declarations before they reach the command line, so that a mistake in a job module is
 * reported as such rather than as a confusing parse error.
 */
export function checkFlagSpecs(jobName: string, specs: FlagSpecs, reserved: ReadonlySet<string>): void {
  if (typeof specs !== 'object' || specs === null) {
    throw new ConfigError(`job "${jobName}": flags must be an object of flag declarations (use {} for none)`);
  }
  const problems = Object.entries(specs).flatMap(([key, spec]) => problemsOf(key, spec, reserved));
  if (problems.length > 0) {
    throw new ConfigError(`job "${jobName}" declares invalid flags:\n  ${problems.join('\n  ')}`);
  }
}
