/**
 * What a slot's tasks use to cross an `exchange` edge (an internal Kinesis stream of exactly P shards, shard s read
 * by slot s). The producing task holds one `ExchangeSender` per outgoing exchange edge; the consuming task holds one
 * `ExchangeReceiverInput` per slot, which delivers the records of every exchange edge into that slot. The AWS
 * implementations are in lib/connectors/aws/cluster/exchange; tests may use in-memory ones. Types only: no I/O.
 *
 * Delivery is read-committed, as Kafka Streams' repartition topics: a record reaches the consumer only once a
 * completed checkpoint covers it, so no barrier crosses the exchange and each slot recovers alone. The price is
 * about one checkpoint interval of latency per exchange hop.
 */

/** A batch to send: parallel arrays, `targets[i]` is the consuming slot (0..P-1) the partitioner chose for `values[i]`. */
export interface ExchangeBatch {
  readonly values: readonly unknown[];
  readonly timestamps: readonly number[];
  readonly targets: readonly number[];
}

/** What a producing task checkpoints for one exchange edge (returned by `onBarrier`, given back on restore). */
export interface ExchangeSenderSnapshot {
  readonly edge: string;
  readonly producer: number;
  /** The checkpoint whose barrier took this snapshot. */
  readonly checkpointId: number;
  /** The slot's fencing epoch that sent the records. */
  readonly epoch: number;
  /** Highest frame sequence number of `epoch` sent (and acknowledged by the stream) before the barrier; -1 for none. */
  readonly sentThrough: number;
}

/** The producing side of one exchange edge in one slot. */
export interface ExchangeSender {
  readonly edge: string;
  /**
   * Queues the batch for its targets. Resolves at once while the sender's buffer has room, later when it is full
   * (backpressure: await it before sending more). Rejects with an ExchangeError once the stream refused writes.
   */
  send(batch: ExchangeBatch): Promise<void>;
  /**
   * At the checkpoint barrier: flushes everything sent so far, then writes a marker ("epoch e of producer p sent
   * through seq n at checkpoint c") into every target shard. Resolves, after the markers are acknowledged, with the
   * state to put into the task's snapshot. Ack the checkpoint only after this resolved.
   */
  onBarrier(checkpointId: number): Promise<ExchangeSenderSnapshot>;
  /** Stops writing; pending records are dropped (a restart replays them from the last checkpoint). */
  close(): Promise<void>;
}

/** A run of released records of one edge from one producer slot, in the order the producer sent them. */
export interface ReleasedBatch {
  readonly edge: string;
  readonly producer: number;
  readonly values: readonly unknown[];
  readonly timestamps: readonly number[];
}

/** A completed checkpoint as the worker learns it from the `control` item. */
export interface CompletedCheckpoint {
  readonly checkpointId: number;
  /**
   * The fencing epoch of every slot whose ack completed the checkpoint, indexed by slot
   * (`ControlItem.completed.slotEpochs`). A marker counts only when written by that epoch: a zombie of an older
   * epoch may write markers for the same checkpoint, and they must not release its records.
   */
  readonly slotEpochs: readonly number[];
}

/** Where a receiver resumes reading a shard: at the oldest record it had not delivered, or after the last it read. */
export type ResumePosition = { readonly at: string } | { readonly after: string };

/** Released-through of one (edge, producer): every frame at or below (epoch, seq) was delivered or dropped. */
export interface ProducerProgress {
  readonly edge: string;
  readonly producer: number;
  readonly epoch: number;
  readonly seq: number;
}

/** The receiver's state for one shard. */
export interface ExchangeShardSnapshot {
  readonly shardId: string;
  /** Absent: nothing was read yet (start at the stream's trim horizon). */
  readonly resume?: ResumePosition;
  readonly producers: readonly ProducerProgress[];
}

/** What the consuming task checkpoints for its exchange input (plain JSON). */
export interface ExchangeReceiverSnapshot {
  readonly shards: readonly ExchangeShardSnapshot[];
}

/** The consuming side: the exchange records addressed to one slot. */
export interface ExchangeReceiverInput {
  /** Released records not yet taken, at most `maxBatches` runs. Never blocks; throws the reader's failure if it failed. */
  poll(maxBatches?: number): ReleasedBatch[];
  /** Resolves when `poll` has something (or the reader failed), or when `signal` aborts. */
  whenReady(signal?: AbortSignal): Promise<void>;
  /** The worker saw `control.completed` move: release what the checkpoint covers. Idempotent, monotone. */
  checkpointCompleted(completion: CompletedCheckpoint): void;
  /** The receiver's own checkpoint, taken when the worker injects the trigger at this input. */
  snapshot(): ExchangeReceiverSnapshot;
  close(): Promise<void>;
}

/** The producing side of one slot at one epoch: one sender per outgoing exchange edge, sharing the shard queues. */
export interface ExchangeProducerPort {
  /** The sender of `edge`; `restoredFrom` is its state in the checkpoint the slot restored (absent: a fresh start). */
  sender(edge: string, restoredFrom?: ExchangeSenderSnapshot): ExchangeSender;
  close(): Promise<void>;
}

/**
 * Opens a slot's ends of the exchange stream: what a worker is given (the Kinesis one in functions/worker, in-memory
 * ones in tests). A slot opens a producer only when it has outgoing exchange edges, a receiver only for incoming ones.
 */
export interface ExchangeTransport {
  /** The producer of slot `slot` at fencing epoch `epoch` (its frames carry the epoch). */
  openProducer(slot: number, epoch: number): Promise<ExchangeProducerPort>;
  /** The receiver of slot `slot`, resuming from `restoredFrom` (absent: from the start of its shard). */
  openReceiver(slot: number, restoredFrom: ExchangeReceiverSnapshot | undefined): Promise<ExchangeReceiverInput>;
}
