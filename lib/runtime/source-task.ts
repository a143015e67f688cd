import {
  END_OF_DATA,
  InvalidTimestampError,
  MAX_WATERMARK,
  originAt,
  type BarrierElement,
  type Clock,
  type RecordBatch,
  type FencingToken,
} from '../core/index.ts';
import { assignTimestamps, type InvalidTimestamp } from '../operators/basic/assign-timestamps.ts';
import type { WatermarkGenerator } from '../contracts/watermark-strategy.ts';
import type { SourceNode } from '../graph/logical-graph.ts';
import type { SourceReader, SourceSplit } from '../connectors/source.ts';
import type { InputGate } from './input-gate.ts';
import type { OperatorChain } from './operator-chain.ts';
import { SplitWatermarks, type SplitWatermarksSnapshot } from './split-watermarks.ts';
import { yieldToEventLoop } from './yield.ts';
import type { TaskMetrics } from './task-metrics.ts';
import type { LateDropWarnings } from './late-drop-warnings.ts';
import type { CheckpointParticipant, CheckpointRequests } from './checkpoint-driver/participant.ts';
import { alignmentMember, resolveAlignment } from './alignment/alignment-groups.ts';
import type { AlignmentLink } from './alignment/alignment-link.ts';
import { SourceAlignment } from './alignment/source-alignment.ts';

export interface SourceTaskSetup {
  readonly vertex: number;
  readonly vertexName: string;
  readonly node: SourceNode;
  readonly subtask: number;
  readonly parallelism: number;
  /**
   * The splits this subtask reads, asked once as the task starts: its restored splits, or those the deployment's
   * split enumerator assigns it.
   */
  readonly splits: () => Promise<readonly SourceSplit[]>;
  /** Restored per-split watermark state of the old subtasks, when restoring. */
  readonly splitWatermarks: readonly SplitWatermarksSnapshot[] | undefined;
  readonly chain: OperatorChain;
  /** A source task has no inputs; its gate carries only mail (processing-time callbacks, checkpoint requests). */
  readonly gate: InputGate;
  readonly clock: Clock;
  readonly batchSize: number;
  readonly signal: AbortSignal;
  readonly metrics: TaskMetrics;
  readonly lateDrops: LateDropWarnings;
  readonly checkpoints: CheckpointParticipant;
  readonly requests: CheckpointRequests;
  readonly fencing: FencingToken;
  /** Called with a function that forwards checkpoint completions to the reader (run from the task's mailbox). */
  readonly onReaderComplete: (notify: (checkpointId: number) => Promise<void>) => void;
  /** Shares split watermarks with the other subtasks of the alignment group; undefined: no alignment. */
  readonly alignment: AlignmentLink | undefined;
  /** Cluster slot behind an aligned keyBy: the key groups its reader keeps (SourceReaderContext.alignedKeyGroups). */
  readonly alignedKeyGroups?: { readonly start: number; readonly end: number; readonly maxParallelism: number } | undefined;
}

/** Checks the timestamps records carry when the source has no WatermarkStrategy (nothing to generate). */
const NO_GENERATOR: WatermarkGenerator<unknown> = { onEvent() {}, currentWatermark: () => Number.NEGATIVE_INFINITY };

/** How often a finished source looks for the final checkpoint's trigger and completion. */
const FINAL_CHECKPOINT_POLL_MS = 20;

/**
 * Runs one source subtask and the operators chained to it until the source ends or the job is cancelled.
 * Checkpoint barriers are injected between batches: the reader's split positions, the split watermarks and the
 * chain's state are copied, then the barrier goes downstream behind every record emitted before it.
 */
export async function runSourceTask(setup: SourceTaskSetup): Promise<void> {
  const { node, chain, gate, clock, metrics, requests, checkpoints } = setup;
  const splits = [...(await setup.splits())];
  const strategy = node.watermarks;
  const watermarks =
    strategy === undefined ? undefined : new SplitWatermarks(strategy, node.name, setup.subtask, clock.now());
  if (watermarks !== undefined && setup.splitWatermarks !== undefined) {
    watermarks.restore(setup.splitWatermarks, new Set(splits.map((s) => s.id)));
  }
  if (watermarks !== undefined && node.source.concurrentSplits === true) {
    watermarks.register(splits.map((s) => s.id), clock.now());
  }
  let reader: SourceReader<unknown> | undefined;
  let idle = false;
  const invalid: InvalidTimestamp[] = [];
  const collectInvalid = (bad: InvalidTimestamp): void => {
    invalid.push(bad);
  };

  /** Records with an invalid timestamp go to the source's dead letters; without any, the job fails naming one. */
  const deadLetterInvalid = async (batch: RecordBatch<unknown>): Promise<void> => {
    for (const bad of invalid) {
      const origin = originAt(batch, bad.index);
      const sent = origin !== undefined && (await reader!.rejectRecord?.(origin.split, origin.offset, bad.reason)) === true;
      if (!sent) {
        throw new InvalidTimestampError(
          node.name,
          setup.subtask,
          origin,
          bad.timestamp,
          bad.reason,
          `source "${node.source.name}" has no dead-letter output for it: give the source one (the examples' ` +
            '--dead-letter FILE), or fix or filter the record in its parse function',
        );
      }
    }
    invalid.length = 0;
  };

  const alignment = createAlignment(setup);
  // A new minimum of the group wakes a waiting task; it applies between batches.
  alignment?.subscribe((apply) => gate.post(apply));
  let subtaskPaused = false;
  const reportWatermark = (now: number, force: boolean): void =>
    alignment?.report(idle ? undefined : watermarks!.alignmentWatermark(), now, force);
  /** Pauses and resumes splits after the group's minimum or a split's watermark moved; true: the whole task waits. */
  const align = (now: number): boolean => {
    if (alignment === undefined || watermarks === undefined) return false;
    const pauseSplits = reader!.pauseOrResumeSplits?.bind(reader);
    if (pauseSplits !== undefined) {
      const { pause, resume } = alignment.splitChanges(watermarks.activeWatermarks());
      if (pause.length > 0 || resume.length > 0) pauseSplits(pause, resume);
      watermarks.setPaused(pause, true, now);
      watermarks.setPaused(resume, false, now);
      return false;
    }
    const paused = alignment.subtaskPaused(watermarks.alignmentWatermark() ?? Number.NEGATIVE_INFINITY);
    if (paused !== subtaskPaused) watermarks.setPaused(undefined, paused, now);
    subtaskPaused = paused;
    return paused;
  };

  const takeCheckpoint = async (barrier: BarrierElement): Promise<void> => {
    const started = performance.now();
    const operators = await chain.snapshot(barrier.checkpointId, barrier.savepoint);
    const snapshot = {
      vertex: setup.vertex,
      subtask: setup.subtask,
      sourceSplits: reader!.currentSplits(barrier.checkpointId),
      splitWatermarks: watermarks?.snapshot(),
      operators,
    };
    chain.broadcast(barrier);
    checkpoints.acknowledge(setup.vertexName, barrier.checkpointId, snapshot, performance.now() - started);
  };
  const betweenBatches = async (): Promise<void> => {
    // Processing-time callbacks of chained operators and checkpoint requests run between batches.
    for (let mail = gate.poll(); mail !== undefined; mail = gate.poll()) {
      if (mail.kind === 'mail') await mail.run();
    }
    for (let barrier = requests.take(); barrier !== undefined; barrier = requests.take()) await takeCheckpoint(barrier);
  };

  try {
    reader = await node.source.createReader(splits, {
      subtask: setup.subtask,
      parallelism: setup.parallelism,
      clock,
      signal: setup.signal,
      fencing: setup.fencing,
      checkpointing: checkpoints.enabled,
      ...(setup.alignedKeyGroups === undefined ? {} : { alignedKeyGroups: setup.alignedKeyGroups }),
    });
    const opened = reader;
    // A reader that cannot tell has nothing at all when it says 'wait'.
    const caughtUp: (splitId: string) => boolean = opened.caughtUp?.bind(opened) ?? (() => true);
    setup.onReaderComplete(async (checkpointId) => {
      await opened.notifyCheckpointComplete?.(checkpointId);
    });
    await chain.open();
    for (;;) {
      await betweenBatches();
      if (alignment !== undefined && align(clock.now())) {
        // Paused by alignment: tell the group where this task stands, then sleep until its minimum moves (the
        // interval is only a safety net: a new minimum wakes the task).
        reportWatermark(clock.now(), true);
        await gate.waitFor(alignment.settings.updateIntervalMs);
        continue;
      }
      const result = await reader.poll(setup.batchSize);
      if (result.kind === 'end') break;
      if (result.kind === 'wait') {
        if (watermarks !== undefined) {
          watermarks.markCaughtUp(result.caughtUpSplits);
          const allIdle = watermarks.checkIdle(clock.now(), caughtUp);
          if (allIdle !== idle) {
            idle = allIdle;
            chain.markIdle(idle);
          }
        }
        reportWatermark(clock.now(), true);
        // With paused splits the reader may have nothing else to read: no busy polling until the minimum moves.
        const paused = alignment !== undefined && alignment.pausedSplits.size > 0;
        await gate.waitFor(paused ? Math.max(result.retryAfterMs, alignment.settings.updateIntervalMs) : result.retryAfterMs);
        continue;
      }
      const now = clock.now();
      let batch = result.batch;
      if (watermarks !== undefined) {
        batch = watermarks.onBatch(batch, now, collectInvalid) as typeof batch;
        for (const id of result.finishedSplits ?? []) watermarks.markFinished(id);
        if (idle) {
          idle = false;
          chain.markIdle(false);
        }
      } else {
        batch = assignTimestamps(batch, undefined, NO_GENERATOR, node.name, setup.subtask, collectInvalid) as typeof batch;
      }
      if (invalid.length > 0) await deadLetterInvalid(result.batch);
      metrics.recordsOut += batch.values.length;
      if (batch.values.length > 0) chain.pushBatch(batch, 0);
      if (watermarks !== undefined) {
        watermarks.wakeIdle(caughtUp);
        const wm = watermarks.advance();
        if (wm !== undefined) chain.pushWatermark(wm);
        reportWatermark(now, false);
      }
      metrics.droppedLateRecords = chain.droppedLateRecords();
      setup.lateDrops.update(metrics.droppedLateRecords, performance.now());
      await chain.drain();
      if (chain.blocked) await chain.awaitCapacity();
      await yieldToEventLoop();
    }
    // Finished splits hold nobody back any more.
    alignment?.report(undefined, clock.now(), true);
    // End of bounded input: the final watermark fires every event-time timer, operators flush, and downstream
    // tasks learn that no more data follows.
    chain.pushWatermark(MAX_WATERMARK);
    await chain.drain();
    await chain.endInput();
    chain.broadcast(END_OF_DATA);
    if (checkpoints.enabled) {
      // Keep taking part in checkpoints until the final one (triggered once every source finished) is complete:
      // then everything is durable and committed. An aborted final checkpoint is retried by the coordinator.
      checkpoints.sourceFinished({ vertex: setup.vertex, subtask: setup.subtask });
      for (;;) {
        await betweenBatches();
        if (checkpoints.finalCompleted()) break;
        await gate.waitFor(FINAL_CHECKPOINT_POLL_MS);
      }
    }
    await chain.finishOutputs();
  } finally {
    await reader?.close();
  }
}

function createAlignment(setup: SourceTaskSetup): SourceAlignment | undefined {
  const settings = setup.node.watermarks === undefined ? undefined : resolveAlignment(setup.node);
  if (settings === undefined || setup.alignment === undefined) return undefined;
  return new SourceAlignment(settings, setup.alignment, alignmentMember(setup.vertex, setup.subtask));
}
