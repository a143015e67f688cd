import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../lib/cli/exit-codes.ts';
import { exitCodeOf, formatFailure, formatSummary } from '../../../lib/cli/report.ts';
import { ConfigError, InternalError, JobFailedError, UserFunctionError } from '../../../lib/core/index.ts';
import { RemoteTaskError, serializeError } from '../../../lib/runtime/threads/remote-error.ts';

const userError = () => new UserFunctionError('explode', 1, { split: 'in.jsonl#1', offset: 4096 }, new Error('bad account a-3'));

describe('formatSummary', () => {
  it('prints records read, duration and events per second', () => {
    expect(formatSummary('fraud', { sourceRecords: 1_000_000, durationMs: 2500 })).toBe(
      'sluice: job "fraud" finished: 1,000,000 records read in 2.50 s (400,000 events/s)',
    );
  });

  it('reports late records that were dropped, and says nothing of them when there were none', () => {
    expect(formatSummary('fraud', { sourceRecords: 1000, durationMs: 1000, droppedLateRecords: 1234 })).toBe(
      'sluice: job "fraud" finished: 1,000 records read in 1.00 s (1,000 events/s); 1,234 late records dropped (behind the watermark, no late-data output)',
    );
    expect(formatSummary('fraud', { sourceRecords: 1000, durationMs: 1000, droppedLateRecords: 1 })).toContain('; 1 late record dropped (');
    expect(formatSummary('fraud', { sourceRecords: 1000, durationMs: 1000, droppedLateRecords: 0 })).not.toContain('late');
  });

  it('does not divide by zero for an instant job', () => {
    expect(formatSummary('x', { sourceRecords: 0, durationMs: 0 })).toContain('0 records read in 0.00 s (0 events/s)');
  });
});

describe('formatFailure', () => {
  const expected = [
    'error: job "fraud" failed: a user function threw',
    '  operator: explode (subtask 1)',
    '  record:   split in.jsonl#1 offset 4096',
    '  cause:    bad account a-3',
  ];

  it('names operator, subtask, record origin and cause of a user function error in this thread', () => {
    expect(formatFailure('fraud', new JobFailedError('job failed: ...', userError()))).toEqual(expected);
  });

  it('recovers the same details from a worker thread report', () => {
    const remote = new RemoteTaskError(serializeError(userError()));
    expect(formatFailure('fraud', new JobFailedError('job failed: ...', remote))).toEqual(expected);
  });

  it('prints a configuration error as is', () => {
    expect(formatFailure('fraud', new ConfigError('--window-ms must be positive'))).toEqual(['error: --window-ms must be positive']);
  });

  it('adds the stack of unexpected errors', () => {
    const lines = formatFailure('fraud', new JobFailedError('job failed: oops', new InternalError('oops')));
    expect(lines[0]).toBe('error: job "fraud" failed: oops');
    expect(lines[1]).toMatch(/^ {2}InternalError: oops\n {6}at /);
    const remote = new RemoteTaskError(serializeError(new TypeError('x is undefined')));
    expect(formatFailure('fraud', new JobFailedError('job failed', remote))[1]).toMatch(/TypeError: x is undefined/);
  });
});

describe('exitCodeOf', () => {
  it('is 2 for configuration errors, in this thread or reported by a task', () => {
    expect(exitCodeOf(new ConfigError('bad'))).toBe(ExitCode.usage);
    expect(exitCodeOf(new JobFailedError('f', new RemoteTaskError(serializeError(new ConfigError('no dir')))))).toBe(ExitCode.usage);
  });

  it('is 1 for failures of a running job', () => {
    expect(exitCodeOf(new JobFailedError('f', userError()))).toBe(ExitCode.jobFailed);
    expect(exitCodeOf(new Error('boom'))).toBe(ExitCode.jobFailed);
  });
});
