import {
  keyGroupFunction,
  keyGroupRangeForSubtask,
  type KeyGroupFunction,
  type Clock,
  type ControlElement,
  type KeyGroupRange,
  type OutputTag,
  type RecordBatch,
  type FencingToken,
} from '../core/index.ts';
import { keyGroupHashOf, type OperatorNode } from '../graph/logical-graph.ts';
import type { Operator, OperatorContext } from '../operators/operator.ts';
import type { IdleAwareOutput } from '../operators/output.ts';
import type { InternalTimerService, TimerKeyGroupSnapshot } from '../state/timers/timer-service.ts';
import type { KeyedStateBackend, KeyedStateHandle, PendingKeyedSnapshot, SharedStateStore } from '../state/index.ts';
import type { RecordWriter } from './record-writer.ts';
import { failPoint } from '../core/fault-injection.ts';
import { trackStateDeclarations, type DeclaredState } from './state-declarations.ts';

/** Which operator subtask a keyed state backend serves: file-based backends name their local directory after it. */
export interface KeyedStateScope {
  /** Stable across runs of the same job graph: `<vertex name>-<node id>` made file-name safe. */
  readonly operatorId: string;
  readonly subtask: number;
  /** The attempt that runs it. */
  readonly fencing: FencingToken;
}

/** What a chain needs from its composition root: which state backend and timer service keyed operators get. */
export interface KeyedServices {
  /** `keyGroupOf`: the operator's key-group function (its keyed edge's hash); undefined means murmur. */
  createKeyedState(range: KeyGroupRange, maxParallelism: number, scope: KeyedStateScope, keyGroupOf?: KeyGroupFunction): KeyedStateBackend;
  /** The timer service of a keyed operator; a backend that keeps timers as keyed state (RocksDB) provides it. */
  createTimerService(maxParallelism: number, keyedState: KeyedStateBackend, keyGroupOf?: KeyGroupFunction): InternalTimerService;
}

/** Network writers of one logical node: its main output and each side output. */
export interface NodeWriters {
  main: RecordWriter[];
  side: Map<string, RecordWriter[]>;
}

export interface ChainSetup {
  readonly vertexName: string;
  readonly subtask: number;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly clock: Clock;
  readonly chain: readonly OperatorNode[];
  /** Writers per logical node id (the source node, when there is one, included). */
  readonly writers: ReadonlyMap<number, NodeWriters>;
  /** The source node of a vertex that starts with a source: its output feeds the chain head and its own edges. */
  readonly headNodeId: number | undefined;
  readonly services: KeyedServices;
  readonly checkpointing: boolean;
  readonly fencing: FencingToken;
  /** Schedules `run` on the task between elements. */
  readonly post: (run: () => void | Promise<void>) => void;
  /** Restored state per logical node id; absent when starting fresh. */
  readonly restored?: ReadonlyMap<number, RestoredOperatorState> | undefined;
  /** Where the restored checkpoint's shared state files are (file-based keyed state). */
  readonly restoreStore?: SharedStateStore | undefined;
  /** Who commits two-phase-commit sinks (OperatorContext.sinkCommitMode). @default 'self' */
  readonly sinkCommitMode?: 'self' | 'coordinator' | undefined;
  /** Told once every operator of the chain opened (its state restored). @default nothing */
  readonly onOpened?: (() => void) | undefined;
}

/** One operator's part of a task snapshot; a pending keyed snapshot is completed by the asynchronous phase. */
export interface OperatorSnapshot {
  readonly nodeId: number;
  /** The keyed states the operator declared (name, kind, TTL), which a restore must agree with. */
  readonly states?: DeclaredState[] | undefined;
  readonly keyed?: KeyedStateHandle | PendingKeyedSnapshot | undefined;
  readonly timers?: TimerKeyGroupSnapshot[] | undefined;
  readonly operatorState?: unknown[] | undefined;
  readonly watermark: number;
}

/** What one operator of the chain starts from: every old subtask's keyed state and timers (each keeps its key
 * groups), the operator-state items dealt to this subtask, and the watermark it had reached. */
export interface RestoredOperatorState {
  /** The keyed states the operator had declared; empty in snapshots from before they were recorded. */
  readonly states: readonly DeclaredState[];
  readonly keyed: readonly KeyedStateHandle[];
  readonly timers: readonly TimerKeyGroupSnapshot[];
  readonly items: readonly unknown[];
  readonly watermark: number;
}

interface Slot {
  readonly nodeId: number;
  readonly operator: Operator<unknown, unknown>;
  readonly output: IdleAwareOutput<unknown>;
  readonly keyedState: KeyedStateBackend | undefined;
  readonly timers: InternalTimerService | undefined;
  /** The states the operator declared so far (set once it opens with keyed state). */
  declaredStates: (() => DeclaredState[]) | undefined;
  watermark: number;
  wakeupAt: number;
}

/**
 * The operators of one vertex subtask, wired output-to-input by direct calls. Promises returned by hooks are
 * collected in `pending` and awaited by the task before the next input element.
 */
export class OperatorChain {
  private readonly slots: Slot[] = [];
  private readonly allWriters: RecordWriter[];
  /** Output of the (virtual) source node, for chains that start at a source. */
  readonly sourceOutput: IdleAwareOutput<unknown> | undefined;
  pending: Promise<void>[] = [];
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeTimerAt = Number.POSITIVE_INFINITY;
  private closed = false;

  constructor(private readonly setup: ChainSetup) {
    this.allWriters = [...setup.writers.values()].flatMap((w) => [...w.main, ...[...w.side.values()].flat()]);
    const range = keyGroupRangeForSubtask(setup.subtask, setup.parallelism, setup.maxParallelism);
    for (let i = setup.chain.length - 1; i >= 0; i--) {
      const node = setup.chain[i]!;
      // Murmur operators pass no function at all, so their backends run exactly as before.
      const hash = node.keyed ? keyGroupHashOf(node) : undefined;
      const keyGroupOf = hash === 'kinesis-hash' ? keyGroupFunction(hash) : undefined;
      const keyedState = node.keyed
        ? setup.services.createKeyedState(
            range,
            setup.maxParallelism,
            { operatorId: operatorIdOf(node), subtask: setup.subtask, fencing: setup.fencing },
            keyGroupOf,
          )
        : undefined;
      this.slots[i] = {
        nodeId: node.id,
        operator: node.createOperator(),
        output: this.outputFor(node.id, i + 1),
        keyedState,
        timers: keyedState === undefined ? undefined : setup.services.createTimerService(setup.maxParallelism, keyedState, keyGroupOf),
        declaredStates: undefined,
        watermark: Number.NEGATIVE_INFINITY,
        wakeupAt: Number.POSITIVE_INFINITY,
      };
    }
    this.sourceOutput = setup.headNodeId === undefined ? undefined : this.outputFor(setup.headNodeId, 0);
  }

  get length(): number {
    return this.slots.length;
  }

  async open(): Promise<void> {
    const { setup } = this;
    const range = keyGroupRangeForSubtask(setup.subtask, setup.parallelism, setup.maxParallelism);
    // Open from the tail so that every operator's downstream is ready when it opens.
    for (let i = this.slots.length - 1; i >= 0; i--) {
      const slot = this.slots[i]!;
      const node = setup.chain[i]!;
      const restored = setup.restored?.get(node.id);
      await slot.keyedState?.open?.();
      if (restored !== undefined) {
        await slot.keyedState?.restore(restored.keyed, setup.restoreStore);
        // Timers kept as keyed state by another backend (a RocksDB savepoint restored on the memory backend).
        const fromFiles = slot.keyedState?.takeRestoredTimers?.() ?? [];
        slot.timers?.restore(fromFiles.length === 0 ? restored.timers : [...restored.timers, ...fromFiles], range);
        slot.watermark = restored.watermark;
      }
      if (slot.keyedState !== undefined) {
        slot.declaredStates = trackStateDeclarations(slot.keyedState, node.name, restored?.states ?? []);
      }
      await slot.operator.initializeState?.(restored?.items ?? []);
      const ctx: OperatorContext = {
        operatorName: node.name,
        subtask: setup.subtask,
        parallelism: setup.parallelism,
        maxParallelism: setup.maxParallelism,
        keyGroupRange: node.keyed ? range : { start: 0, end: setup.maxParallelism - 1 },
        clock: setup.clock,
        keyedState: slot.keyedState,
        timers: slot.timers,
        checkpointing: setup.checkpointing,
        fencing: setup.fencing,
        ...(setup.sinkCommitMode === undefined ? {} : { sinkCommitMode: setup.sinkCommitMode }),
        currentWatermark: () => slot.watermark,
        requestProcessingTimeWakeup: (time) => this.requestWakeup(i, time),
      };
      await slot.operator.open?.(ctx, slot.output);
    }
    setup.onOpened?.();
  }

  /**
   * The synchronous phase of a checkpoint: copies every operator's keyed state, timers, operator state and
   * watermark. Processing continues as soon as this returns; writing the copy is the caller's asynchronous phase.
   */
  async snapshot(checkpointId: number, savepoint = false): Promise<OperatorSnapshot[]> {
    failPoint('snapshot');
    const result: OperatorSnapshot[] = [];
    for (const slot of this.slots) {
      const keyed = slot.keyedState?.snapshot(checkpointId, savepoint);
      const timers = slot.timers?.snapshot();
      const operatorState = slot.operator.snapshotState?.(checkpointId);
      // Only asynchronous hooks (a sink's pre-commit) are awaited: each await lets the thread's other tasks run
      // first, and this task's records wait meanwhile.
      result.push({
        nodeId: slot.nodeId,
        ...(slot.declaredStates === undefined ? {} : { states: slot.declaredStates() }),
        keyed,
        timers,
        operatorState: operatorState instanceof Promise ? await operatorState : operatorState,
        watermark: slot.watermark,
      });
      if (this.pending.length > 0) await this.drain();
    }
    return result;
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    for (const slot of this.slots) {
      await slot.keyedState?.notifyCheckpointComplete?.(checkpointId);
      await slot.operator.notifyCheckpointComplete?.(checkpointId);
    }
  }

  /** Feeds a batch into the chain head (or straight to the network when the chain is only a source). */
  pushBatch(batch: RecordBatch<unknown>, inputIndex: number): void {
    if (this.slots.length === 0) this.sourceOutput!.emit(batch);
    else this.track(this.slots[0]!.operator.processBatch(batch, inputIndex));
  }

  pushWatermark(timestamp: number): void {
    if (this.slots.length === 0) this.sourceOutput!.emitWatermark(timestamp);
    else this.deliverWatermark(0, timestamp);
  }

  /** Late records the chain's operators dropped so far (no late-data side output). */
  droppedLateRecords(): number {
    let dropped = 0;
    for (const slot of this.slots) dropped += slot.operator.droppedLateRecords ?? 0;
    return dropped;
  }

  /** Tells every downstream task whether this subtask is idle. */
  markIdle(idle: boolean): void {
    this.broadcast({ kind: 'idle', idle });
  }

  /** Sends a control element (barrier, end of data) on every outgoing channel. */
  broadcast(element: ControlElement): void {
    for (const w of this.allWriters) w.broadcast(element);
  }

  async endInput(): Promise<void> {
    for (const slot of this.slots) {
      await slot.operator.endInput?.();
      await this.drain();
    }
  }

  /** Sends end-of-input downstream on every edge and waits until all of it has left this thread. */
  async finishOutputs(): Promise<void> {
    for (const w of this.allWriters) w.broadcast({ kind: 'end' });
    for (const w of this.allWriters) await w.flushed();
  }

  async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const pending = this.pending;
      this.pending = [];
      await Promise.all(pending);
    }
  }

  get blocked(): boolean {
    for (const w of this.allWriters) if (w.blocked) return true;
    return false;
  }

  async awaitCapacity(): Promise<void> {
    for (const w of this.allWriters) if (w.blocked) await w.awaitCapacity();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.wakeTimer !== undefined) clearTimeout(this.wakeTimer);
    let first: unknown;
    for (const slot of this.slots) {
      try {
        await slot.operator.close?.();
        await slot.keyedState?.dispose();
      } catch (err) {
        first ??= err;
      }
    }
    if (first !== undefined) throw first;
  }

  private track(result: void | Promise<void>): void {
    if (result !== undefined) this.pending.push(result);
  }

  private deliverWatermark(index: number, timestamp: number): void {
    const slot = this.slots[index]!;
    if (timestamp <= slot.watermark) return;
    slot.watermark = timestamp;
    if (slot.operator.processWatermark) this.track(slot.operator.processWatermark(timestamp));
    else slot.output.emitWatermark(timestamp);
  }

  /** Output of operator `index - 1` (or of the source node when index is 0): feeds operator `index` and the network. */
  private outputFor(nodeId: number, nextIndex: number): IdleAwareOutput<unknown> {
    const writers = this.setup.writers.get(nodeId) ?? { main: [], side: new Map<string, RecordWriter[]>() };
    const main = writers.main;
    const allOfNode = [...main, ...[...writers.side.values()].flat()];
    return {
      emit: (batch: RecordBatch<unknown>): void => {
        const next = this.slots[nextIndex];
        if (next !== undefined) this.track(next.operator.processBatch(batch, 0));
        for (let i = 0; i < main.length; i++) main[i]!.emit(batch);
      },
      emitWatermark: (timestamp: number): void => {
        if (this.slots[nextIndex] !== undefined) this.deliverWatermark(nextIndex, timestamp);
        for (const w of allOfNode) w.broadcast({ kind: 'watermark', timestamp });
      },
      emitSide: <S>(tag: OutputTag<S>, batch: RecordBatch<S>): void => {
        const side = writers.side.get(tag.id);
        if (side !== undefined) for (const w of side) w.emit(batch);
      },
      markIdle: (idle: boolean): void => this.markIdle(idle),
    };
  }

  private requestWakeup(index: number, time: number): void {
    const slot = this.slots[index]!;
    if (time >= slot.wakeupAt) return;
    slot.wakeupAt = time;
    this.armWakeTimer();
  }

  /** One timer per chain, set for the earliest wake-up any operator asked for. */
  private armWakeTimer(): void {
    let next = Number.POSITIVE_INFINITY;
    for (const slot of this.slots) if (slot.wakeupAt < next) next = slot.wakeupAt;
    if (next >= this.wakeTimerAt) return;
    if (this.wakeTimer !== undefined) clearTimeout(this.wakeTimer);
    this.wakeTimerAt = next;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.wakeTimerAt = Number.POSITIVE_INFINITY;
      this.setup.post(() => this.fireWakeups());
    }, Math.max(0, next - this.setup.clock.now()));
  }

  private fireWakeups(): void {
    if (this.closed) return;
    const now = this.setup.clock.now();
    for (const slot of this.slots) {
      if (slot.wakeupAt <= now) {
        slot.wakeupAt = Number.POSITIVE_INFINITY;
        this.track(slot.operator.onProcessingTime?.(now));
      }
    }
    this.armWakeTimer();
  }
}

/** A file-name-safe id for an operator that stays the same across runs of the same job graph. */
function operatorIdOf(node: OperatorNode): string {
  const name = node.name.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 60);
  return `${name}-${node.id}`;
}
