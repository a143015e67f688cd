import { SluiceError } from '../../core/index.ts';

/** A slot of this worker failed (a task, its restore, or its checkpoint storage); the worker restarts it locally. */
export class SlotFailedError extends SluiceError {
  readonly slot: number;

  constructor(slot: number, message: string, cause?: unknown) {
    super('SLOT_FAILED', `slot ${slot}: ${message}`, { cause, retriable: true });
    this.slot = slot;
  }
}

/** The slot's lease is no longer this worker's (renewal refused, or an ack was fenced): the slot stops at once. */
export class LeaseLostError extends SluiceError {
  constructor(slot: number, epoch: number, reason: string) {
    super('LEASE_LOST', `slot ${slot} (epoch ${epoch}) is no longer this worker's: ${reason}`, { retriable: false });
  }
}
