import { SluiceError, type SluiceErrorOptions } from '../../../core/index.ts';

/**
 * S3 answered a request with a failure that the SDK does not throw, e.g. a key DeleteObjects could not delete.
 * Retriable: such per-key failures (InternalError, SlowDown) pass when the request is made again.
 */
export class S3RequestError extends SluiceError {
  constructor(message: string, options: SluiceErrorOptions = {}) {
    super('S3_REQUEST', message, { retriable: true, ...options });
  }
}
