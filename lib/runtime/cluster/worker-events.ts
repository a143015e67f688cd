import type { RestoreKind } from './slot-runner.ts';

/** One line of a worker's JSON event log (`sluice worker` prints each as one JSON line on stdout). */
export type WorkerEvent =
  | { readonly event: 'lease-acquired'; readonly slot: number; readonly epoch: number; readonly previousOwner?: string }
  | { readonly event: 'lease-lost'; readonly slot: number; readonly epoch: number; readonly reason: string }
  | {
      readonly event: 'slot-started';
      readonly slot: number;
      readonly epoch: number;
      readonly restore: RestoreKind;
      readonly ms: number;
      readonly checkpointId?: number;
    }
  | { readonly event: 'ack'; readonly slot: number; readonly epoch: number; readonly checkpointId: number; readonly kind: 'ack' | 'decline' }
  /** A conditional write of the slot was refused: its lease names another owner or epoch (nothing was written). */
  | { readonly event: 'fenced'; readonly slot: number; readonly epoch: number; readonly what: string }
  | {
      readonly event: 'slot-failed';
      readonly slot: number;
      readonly epoch: number;
      readonly error: string;
      readonly code?: string;
      /** The pause before the local restart (doubles per consecutive failure); absent: the worker fails instead. */
      readonly restartInMs?: number;
    }
  | { readonly event: 'released'; readonly slot: number; readonly epoch: number; readonly to?: string }
  | { readonly event: 'warning'; readonly message: string; readonly slot?: number };

export function workerEventLine(event: WorkerEvent, now: number = Date.now()): string {
  return JSON.stringify({ at: new Date(now).toISOString(), ...event });
}
