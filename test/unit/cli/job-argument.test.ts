import { describe, expect, it } from 'vitest';
import { findJobArgument } from '../../../lib/cli/job-argument.ts';

const withValue = new Set(['--parallelism', '--max-parallelism']);

describe('findJobArgument', () => {
  it('finds the job right after run', () => {
    expect(findJobArgument(['job.ts', '--input', 'in.jsonl'], withValue)).toBe('job.ts');
  });

  it('skips values of common options given before the job', () => {
    expect(findJobArgument(['--parallelism', '2', 'job.ts'], withValue)).toBe('job.ts');
    expect(findJobArgument(['--parallelism=2', 'job.ts'], withValue)).toBe('job.ts');
  });

  it('prefers an operand that names a module file', () => {
    expect(findJobArgument(['--input', 'in.jsonl', 'jobs/job.mjs'], withValue)).toBe('jobs/job.mjs');
  });

  it('falls back to the first operand, and treats everything after -- as operands', () => {
    expect(findJobArgument(['--verbose', 'myjob'], withValue)).toBe('myjob');
    expect(findJobArgument(['--', '-odd-name.ts'], withValue)).toBe('-odd-name.ts');
  });

  it('returns undefined when there is no operand', () => {
    expect(findJobArgument([], withValue)).toBeUndefined();
    expect(findJobArgument(['--help'], withValue)).toBeUndefined();
    expect(findJobArgument(['--parallelism', '2'], withValue)).toBeUndefined();
  });
});
