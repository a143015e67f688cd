import { SluiceError, type SluiceErrorOptions } from '../../core/errors.ts';

/**
 * The exchange between slots failed: a frame that cannot be written or read, or the stream refused writes after
 * retries. The slot fails and restarts from its latest completed checkpoint (read-committed delivery makes that safe).
 */
export class ExchangeError extends SluiceError {
  constructor(message: string, options: SluiceErrorOptions = {}) {
    super('EXCHANGE', message, options);
  }
}
