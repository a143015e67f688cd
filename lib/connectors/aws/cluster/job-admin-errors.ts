import { ConfigError, SluiceError, type SluiceErrorOptions } from '../../../core/index.ts';

/** A call on the control table failed, or a request was not answered in time. */
export class ClusterControlError extends SluiceError {
  constructor(message: string, options: SluiceErrorOptions = {}) {
    super('CLUSTER_CONTROL', message, options);
  }
}

/**
 * `sluice aws init` found a stored `config` for this job that differs from the one it would write: another plan
 * (fingerprint), another P, or other deployment settings. Nothing was written. `differences` names each field.
 */
export class ClusterConfigConflictError extends ConfigError {
  constructor(
    message: string,
    readonly differences: readonly string[],
  ) {
    super(message);
  }
}

/** A savepoint or stop request that the coordinator marked failed. */
export class ClusterRequestFailedError extends SluiceError {
  constructor(message: string) {
    super('SAVEPOINT_FAILED', message);
  }
}
