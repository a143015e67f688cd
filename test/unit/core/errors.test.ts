import { describe, expect, it } from 'vitest';
import { CancelledError, ConfigError, ERROR_CODES, isErrorCode, SluiceError } from '../../../lib/core/index.ts';
import { RemoteTaskError, serializeError } from '../../../lib/runtime/threads/remote-error.ts';
import { awsErrorName, isTransient, SubscribeToShardEventError } from '../../../lib/connectors/aws/kinesis/errors.ts';
import { S3RequestError } from '../../../lib/connectors/aws/s3/s3-errors.ts';

describe('error codes', () => {
  it('lists each code once and recognises only those', () => {
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    for (const code of ERROR_CODES) expect(isErrorCode(code)).toBe(true);
    for (const other of ['', 'config', 'NOT_A_CODE', undefined, 7]) expect(isErrorCode(other)).toBe(false);
  });

  it('keeps a known code across a thread boundary and falls back to TASK_FAILED for an unknown one', () => {
    expect(new RemoteTaskError(serializeError(new ConfigError('bad flag'))).code).toBe('CONFIG');
    expect(new RemoteTaskError({ ...serializeError(new CancelledError()), code: 'SOMETHING_ELSE' }).code).toBe('TASK_FAILED');
    expect(new RemoteTaskError(serializeError(new TypeError('x'))).code).toBe('TASK_FAILED');
  });

  it('types the errors that replaced plain Errors', () => {
    const cancelled = new CancelledError();
    expect(cancelled).toBeInstanceOf(SluiceError);
    expect([cancelled.code, cancelled.message, cancelled.retriable]).toEqual(['CANCELLED', 'cancelled', false]);
    const s3 = new S3RequestError('S3 did not delete a/b: SlowDown');
    expect([s3.code, s3.retriable]).toEqual(['S3_REQUEST', true]);
  });

  it('names a SubscribeToShard error event by its exception, so it is classified as the SDK error would be', () => {
    const throttled = new SubscribeToShardEventError('InternalFailureException', 'try again');
    expect(throttled).toBeInstanceOf(SluiceError);
    expect(awsErrorName(throttled)).toBe('InternalFailureException');
    expect(isTransient(throttled)).toBe(isTransient(Object.assign(new Error('x'), { name: 'InternalFailureException' })));
    expect(throttled.message).toBe('SubscribeToShard event InternalFailureException: try again');
    expect(isTransient(throttled)).toBe(true);
    const missing = new SubscribeToShardEventError('ResourceNotFoundException', 'gone');
    expect(isTransient(missing)).toBe(isTransient(Object.assign(new Error('x'), { name: 'ResourceNotFoundException' })));
    expect(isTransient(new SubscribeToShardEventError('LimitExceededException', 'slow down'))).toBe(true);
    expect(new SubscribeToShardEventError('$unknown', 'odd').name).toBe('UnknownEvent');
  });
});
