import type { BarrierElement, StreamElement } from '../../core/index.ts';
import type { ClusterEdgeConfig } from '../../cluster/control-items.ts';
import {
  ExchangeError,
  type CompletedCheckpoint,
  type ExchangeProducerPort,
  type ExchangeReceiverInput,
  type ExchangeReceiverSnapshot,
  type ExchangeSender,
  type ExchangeSenderSnapshot,
  type ExchangeTransport,
} from '../../cluster/exchange/index.ts';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';
import type { RestoredJob } from '../restore/restore-plan.ts';
import type { ChannelReceiver, ChannelSender } from '../channels/channel.ts';
import type { ExchangeChannels } from './slot-wiring.ts';

/**
 * What a slot task keeps of the exchange in its snapshot (`TaskSnapshot.exchange`): the producing task the state of
 * its outgoing exchange edges' senders, the slot's receiving task (the lowest vertex with an exchange input) the
 * receiver's state as it was when the trigger was injected.
 */
export interface SlotExchangeState {
  readonly senders?: readonly ExchangeSenderSnapshot[];
  readonly receiver?: ExchangeReceiverSnapshot;
}

/** Released runs moved to the tasks' queues ahead of their polls: enough to keep a task busy, little to hold. */
const QUEUED_BATCHES = 16;

/**
 * A slot's ends of its exchange edges over an ExchangeTransport, as the channel ends its tasks use
 * (ExchangeChannels). Producing side: a RecordWriter's per-target senders feed one ExchangeSender per edge; when the
 * barrier has reached every target, the sender flushes and writes its markers, and the producing task's ack waits
 * for that (`taskState`). Receiving side: released records of the slot's shard are split by edge into one channel
 * per edge; `trigger` takes the receiver's snapshot and puts the barrier behind everything already handed to the
 * channels, so the task's state at the barrier is exactly what the snapshot says was delivered. Watermarks and
 * end-of-input do not cross the exchange (frames carry records only; a cluster runs unbounded sources).
 */
export class SlotExchange implements ExchangeChannels {
  private readonly outgoing = new Map<string, OutgoingEdge>();
  private readonly incoming = new Map<string, IncomingEdge>();
  /** The receiver's snapshot at each trigger, until the receiving task's ack took it. */
  private readonly receiverStates = new Map<number, ExchangeReceiverSnapshot>();
  private readonly abort = new AbortController();
  private pumping: Promise<void> | undefined;
  private queueDrained: (() => void) | undefined;
  private failure: unknown;

  private constructor(
    private readonly slot: number,
    private readonly producer: ExchangeProducerPort | undefined,
    private readonly input: ExchangeReceiverInput | undefined,
    /** Vertex whose snapshot holds the receiver state; -1 without incoming exchange edges. */
    private readonly receiverVertex: number,
    restoredSenders: ReadonlyMap<string, ExchangeSenderSnapshot>,
    edges: readonly { readonly config: ClusterEdgeConfig; readonly fromVertex: number; readonly toVertex: number; readonly targets: number }[],
    private readonly onFailure: (error: unknown) => void,
  ) {
    for (const e of edges) {
      if (producer !== undefined) this.outgoing.set(e.config.id, new OutgoingEdge(e.fromVertex, e.targets, producer.sender(e.config.id, restoredSenders.get(e.config.id))));
      if (input !== undefined) this.incoming.set(e.config.id, new IncomingEdge(e.toVertex, () => this.drained()));
    }
  }

  /**
   * Opens the slot's exchange ends for the plan's exchange edges (undefined when it has none): the producer at
   * `epoch` with each edge's restored sender state, the receiver from its restored state.
   */
  static async open(options: {
    readonly transport: ExchangeTransport;
    readonly plan: PhysicalPlan;
    readonly modes: ReadonlyMap<number, ClusterEdgeConfig>;
    readonly slot: number;
    readonly epoch: number;
    readonly restored: RestoredJob | undefined;
    /** The exchange failed while the slot ran: the slot must fail (and restart at a new epoch). */
    readonly onFailure: (error: unknown) => void;
  }): Promise<SlotExchange | undefined> {
    const { plan, modes, slot } = options;
    const edges = plan.edges
      .filter((e) => modes.get(e.id)?.mode === 'exchange')
      .map((e) => ({ config: modes.get(e.id)!, fromVertex: e.fromVertex, toVertex: e.toVertex, targets: plan.vertices[e.toVertex]!.parallelism }));
    if (edges.length === 0) return undefined;
    const state = restoredExchangeState(options.restored, slot);
    const senders = new Map((state.senders ?? []).map((s) => [s.edge, s]));
    const receiverVertex = Math.min(...edges.map((e) => e.toVertex));
    const producer = await options.transport.openProducer(slot, options.epoch);
    let input: ExchangeReceiverInput;
    try {
      input = await options.transport.openReceiver(slot, state.receiver);
    } catch (error) {
      await producer.close();
      throw error;
    }
    const exchange = new SlotExchange(slot, producer, input, receiverVertex, senders, edges, options.onFailure);
    exchange.pumping = exchange.pump();
    return exchange;
  }

  sender(edge: ClusterEdgeConfig, _slot: number, to: number): ChannelSender {
    return this.outgoingOf(edge).target(to);
  }

  receiver(edge: ClusterEdgeConfig): ChannelReceiver {
    const incoming = this.incoming.get(edge.id);
    if (incoming === undefined) throw new ExchangeError(`slot ${this.slot}: edge ${edge.id} is not an exchange edge of the plan`);
    return incoming;
  }

  /** The checkpoint's barrier is injected at the exchange input: snapshot now, barrier behind what was handed over. */
  trigger(barrier: BarrierElement): void {
    if (this.input === undefined || this.failure !== undefined) return;
    try {
      this.moveReleased(Number.POSITIVE_INFINITY);
    } catch (error) {
      this.fail(error);
      return;
    }
    this.receiverStates.set(barrier.checkpointId, this.input.snapshot());
    for (const edge of this.incoming.values()) edge.push(barrier);
  }

  /** `control.completed` moved: the receiver releases what the checkpoint covers. */
  completed(completion: CompletedCheckpoint): void {
    this.input?.checkpointCompleted(completion);
    for (const id of this.receiverStates.keys()) if (id <= completion.checkpointId) this.receiverStates.delete(id);
    for (const edge of this.outgoing.values()) edge.forget(completion.checkpointId);
  }

  /**
   * The exchange state to add to task `vertex`'s snapshot of `checkpointId`, once it is safe to ack: the producing
   * task's after its markers are acknowledged. Undefined when the task has no part in the exchange.
   */
  taskState(vertex: number, checkpointId: number): Promise<SlotExchangeState> | undefined {
    const outgoing = [...this.outgoing.values()].filter((e) => e.fromVertex === vertex);
    const receiver = vertex === this.receiverVertex ? this.receiverStates.get(checkpointId) : undefined;
    if (outgoing.length === 0 && receiver === undefined) return undefined;
    // Only the receiving task's ack takes the receiver state (the producing task may ack first).
    if (receiver !== undefined) this.receiverStates.delete(checkpointId);
    return Promise.all(outgoing.map((e) => e.snapshot(checkpointId))).then((senders) => ({
      ...(senders.length === 0 ? {} : { senders }),
      ...(receiver === undefined ? {} : { receiver }),
    }));
  }

  async close(): Promise<void> {
    this.abort.abort();
    this.queueDrained?.();
    await Promise.allSettled([this.producer?.close(), this.input?.close(), this.pumping]);
  }

  private outgoingOf(edge: ClusterEdgeConfig): OutgoingEdge {
    const outgoing = this.outgoing.get(edge.id);
    if (outgoing === undefined) throw new ExchangeError(`slot ${this.slot}: edge ${edge.id} is not an exchange edge of the plan`);
    return outgoing;
  }

  /** Moves released runs into the edges' channels while they have room; wakes the tasks. */
  private async pump(): Promise<void> {
    const input = this.input;
    if (input === undefined) return;
    const signal = this.abort.signal;
    try {
      while (!signal.aborted) {
        await input.whenReady(signal);
        if (signal.aborted) return;
        if (this.queued() >= QUEUED_BATCHES) {
          await new Promise<void>((resolve) => (this.queueDrained = resolve));
          this.queueDrained = undefined;
          continue;
        }
        this.moveReleased(QUEUED_BATCHES - this.queued());
      }
    } catch (error) {
      if (signal.aborted) return;
      this.fail(new ExchangeError(`slot ${this.slot}: the exchange receiver failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error, retriable: true }));
    }
  }

  private moveReleased(max: number): void {
    if (this.input === undefined) return;
    for (const run of this.input.poll(max)) {
      const edge = this.incoming.get(run.edge);
      if (edge === undefined) {
        throw new ExchangeError(`slot ${this.slot}: the exchange stream delivered records of edge ${run.edge}, which this job does not have; is another job writing to the stream?`);
      }
      edge.push({ kind: 'batch', batch: { values: [...run.values], timestamps: [...run.timestamps] } });
    }
  }

  private queued(): number {
    let n = 0;
    for (const edge of this.incoming.values()) n += edge.length;
    return n;
  }

  private drained(): void {
    if (this.queued() < QUEUED_BATCHES / 2) this.queueDrained?.();
  }

  private fail(error: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.onFailure(error);
  }
}

/** The exchange state of slot `slot` in a restored checkpoint: every task's part of it, merged. */
export function restoredExchangeState(restored: RestoredJob | undefined, slot: number): SlotExchangeState {
  const senders: ExchangeSenderSnapshot[] = [];
  let receiver: ExchangeReceiverSnapshot | undefined;
  for (const snapshots of restored?.snapshots.values() ?? []) {
    for (const s of snapshots) {
      if (s.subtask !== slot || s.exchange === undefined) continue;
      const state = s.exchange as SlotExchangeState;
      senders.push(...(state.senders ?? []));
      receiver ??= state.receiver;
    }
  }
  return { senders, ...(receiver === undefined ? {} : { receiver }) };
}

/**
 * One outgoing exchange edge of the slot: the RecordWriter's sender per target. Records go to the edge's
 * ExchangeSender with their target; a barrier, once every target has it, starts the sender's marker write.
 */
class OutgoingEdge {
  private inFlight = 0;
  private failure: unknown;
  private room: Promise<void> = Promise.resolve();
  private readonly barriers = new Map<number, number>();
  private readonly snapshots = new Map<number, Promise<ExchangeSenderSnapshot>>();

  constructor(
    readonly fromVertex: number,
    private readonly targets: number,
    private readonly sender: ExchangeSender,
  ) {}

  target(to: number): ChannelSender {
    return new TargetSender(this, to);
  }

  /** A batch is still being queued by the sender (its buffer was full): the task waits before sending more. */
  get blocked(): boolean {
    return this.inFlight > 0;
  }

  awaitCapacity(): Promise<void> {
    return this.room;
  }

  snapshot(checkpointId: number): Promise<ExchangeSenderSnapshot> {
    const snapshot = this.snapshots.get(checkpointId);
    if (snapshot === undefined) {
      return Promise.reject(new ExchangeError(`edge ${this.sender.edge}: the producing task acked checkpoint ${checkpointId} before its barrier reached every target`));
    }
    this.snapshots.delete(checkpointId);
    return snapshot;
  }

  /** Barriers counted for checkpoints up to a completed one are of no use any more (a subsumed checkpoint's). */
  forget(completed: number): void {
    for (const id of this.barriers.keys()) if (id <= completed) this.barriers.delete(id);
  }

  send(to: number, element: StreamElement<unknown>): void {
    if (this.failure !== undefined) throw this.failure;
    switch (element.kind) {
      case 'batch': {
        const { values, timestamps } = element.batch;
        if (values.length === 0) return;
        this.inFlight++;
        const sent = this.sender.send({ values, timestamps, targets: new Array<number>(values.length).fill(to) }).then(
          () => {
            this.inFlight--;
          },
          (error: unknown) => {
            this.inFlight--;
            this.failure = error;
            throw error;
          },
        );
        this.room = sent;
        sent.catch(() => undefined);
        return;
      }
      case 'barrier': {
        const seen = (this.barriers.get(element.checkpointId) ?? 0) + 1;
        if (seen < this.targets) {
          this.barriers.set(element.checkpointId, seen);
          return;
        }
        this.barriers.delete(element.checkpointId);
        const snapshot = this.sender.onBarrier(element.checkpointId);
        snapshot.catch(() => undefined);
        this.snapshots.set(element.checkpointId, snapshot);
        return;
      }
      default:
        // Watermarks, idleness and end of input do not cross the exchange.
        return;
    }
  }
}

/** The RecordWriter's sender of one target of an outgoing exchange edge. */
class TargetSender implements ChannelSender {
  constructor(
    private readonly edge: OutgoingEdge,
    private readonly to: number,
  ) {}

  get blocked(): boolean {
    return this.edge.blocked;
  }

  send(element: StreamElement<unknown>): void {
    this.edge.send(this.to, element);
  }

  awaitCapacity(): Promise<void> {
    return this.edge.awaitCapacity();
  }

  flushed(): Promise<void> {
    return Promise.resolve();
  }
}

/** One incoming exchange edge of the slot: a channel of released batches and injected barriers. */
class IncomingEdge implements ChannelReceiver {
  private readonly queue: StreamElement<unknown>[] = [];
  private listener: (() => void) | undefined;
  private closed = false;

  constructor(
    readonly toVertex: number,
    private readonly onTaken: () => void,
  ) {}

  get length(): number {
    return this.queue.length;
  }

  push(element: StreamElement<unknown>): void {
    if (this.closed) return;
    this.queue.push(element);
    this.listener?.();
  }

  poll(): StreamElement<unknown> | undefined {
    const element = this.queue.shift();
    if (element !== undefined) this.onTaken();
    return element;
  }

  setListener(listener: () => void): void {
    this.listener = listener;
  }

  close(): void {
    this.closed = true;
    this.queue.length = 0;
  }
}
