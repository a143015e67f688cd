import { SluiceError } from '../core/errors.ts';

/**
 * Another supervisor execution owns the job's `coordinator` item: this one must stop at once and change nothing
 * (its state machine ends `Superseded`). Not retriable: retrying cannot make the older execution the owner again.
 */
export class CoordinatorSupersededError extends SluiceError {
  constructor(
    readonly execution: string,
    readonly owner: string,
  ) {
    super('COORDINATOR_SUPERSEDED', `coordinator execution ${execution} was superseded by ${owner}: it stops and writes nothing more`, {
      retriable: false,
    });
  }
}

/**
 * Reading or writing the control table failed, or a write lost an optimistic-version race against another
 * invocation of the same execution (Express runs a handler at least once, so two copies may run at a time). Retriable:
 * the handler's next try reads the item again.
 */
export class ClusterControlError extends SluiceError {
  constructor(message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    const why = options.cause === undefined ? '' : `: ${options.cause instanceof Error ? options.cause.message : String(options.cause)}`;
    super('CLUSTER_CONTROL', `${message}${why}`, { retriable: options.retriable ?? true, ...(options.cause === undefined ? {} : { cause: options.cause }) });
  }
}
