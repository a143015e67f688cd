import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { compileLeaseKeeperOptions } from '../../../lib/connectors/aws/cluster/lease-keeper-options.ts';
import { controlTableError, failedOnCondition } from '../../../lib/connectors/aws/cluster/worker-control-errors.ts';

function awsError(name: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`${name} happened`), { name, ...extra });
}

const cancelled = (...codes: string[]) => awsError('TransactionCanceledException', { CancellationReasons: codes.map((Code) => ({ Code })) });

describe('lease keeper options', () => {
  it('defaults: a 10 s lease renewed every third, no slot cap, a worker id of host, pid and random digits', () => {
    const compiled = compileLeaseKeeperOptions();
    expect(compiled).toMatchObject({ leaseDurationMs: 10_000, roundIntervalMs: 3333, maxSlots: Infinity, slotCount: undefined });
    expect(compiled.workerId).toMatch(new RegExp(`^${hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-${process.pid}-[0-9a-f]{8}$`));
    expect(compileLeaseKeeperOptions().workerId).not.toBe(compiled.workerId);
  });

  it.each([{ leaseDurationMs: 0 }, { leaseDurationMs: 1.5e3 + 0.5 }, { maxSlots: 0 }, { slotCount: -1 }, { workerId: '' }])('refuses %o with a ConfigError', (options) => {
    expect(() => compileLeaseKeeperOptions(options)).toThrow(expect.objectContaining({ code: 'CONFIG' }));
  });
});

describe('control table failures', () => {
  it.each([
    { error: awsError('ConditionalCheckFailedException'), index: 0, fenced: true },
    { error: cancelled('ConditionalCheckFailed', 'None'), index: 0, fenced: true },
    { error: cancelled('None', 'ConditionalCheckFailed'), index: 0, fenced: false },
    { error: cancelled('ThrottlingError', 'None'), index: 0, fenced: false },
    { error: awsError('ValidationException'), index: 0, fenced: false },
  ])('failed on the fencing condition: $error.name $error.CancellationReasons -> $fenced', ({ error, index, fenced }) => {
    expect(failedOnCondition(error, index)).toBe(fenced);
  });

  it.each([
    { error: awsError('ProvisionedThroughputExceededException'), retriable: true },
    { error: cancelled('ThrottlingError', 'None'), retriable: true },
    { error: cancelled('TransactionConflict', 'None'), retriable: true },
    { error: awsError('InternalServerError', { $fault: 'server' }), retriable: true },
    { error: Object.assign(new Error('reset'), { code: 'ECONNRESET' }), retriable: true },
    { error: awsError('ResourceNotFoundException'), retriable: false },
    { error: awsError('ValidationException'), retriable: false },
  ])('$error.name is a CLUSTER_CONTROL error, retriable: $retriable', ({ error, retriable }) => {
    const typed = controlTableError('renew lease of slot 3', 'ctl', error);
    expect(typed).toMatchObject({ code: 'CLUSTER_CONTROL', retriable, cause: error });
    expect(typed.message).toContain('control table "ctl": renew lease of slot 3 failed');
  });
});
