import { MAX_WATERMARK, type Clock } from '../core/index.ts';
import type { SourceNode } from '../graph/logical-graph.ts';
import type { SourceReader, SourceSplit } from '../connectors/source.ts';
import type { InputGate } from './input-gate.ts';
import type { OperatorChain } from './operator-chain.ts';
import { SplitWatermarks } from './split-watermarks.ts';
import { YIELD_EVERY, yieldToEventLoop } from './yield.ts';
import type { TaskMetrics } from './task-metrics.ts';

export interface SourceTaskSetup {
  readonly node: SourceNode;
  readonly subtask: number;
  readonly parallelism: number;
  readonly splits: SourceSplit[];
  readonly chain: OperatorChain;
  /** A source task has no inputs; its gate carries only mail (processing-time callbacks). */
  readonly gate: InputGate;
  readonly clock: Clock;
  readonly batchSize: number;
  readonly signal: AbortSignal;
  readonly metrics: TaskMetrics;
}

/** Runs one source subtask and the operators chained to it until the source ends or the job is cancelled. */
export async function runSourceTask(setup: SourceTaskSetup): Promise<void> {
  const { node, chain, gate, clock, metrics } = setup;
  const strategy = node.watermarks;
  const watermarks =
    strategy === undefined ? undefined : new SplitWatermarks(strategy, node.name, setup.subtask, clock.now());
  let reader: SourceReader<unknown> | undefined;
  let idle = false;
  try {
    reader = await node.source.createReader(setup.splits, {
      subtask: setup.subtask,
      parallelism: setup.parallelism,
      clock,
      signal: setup.signal,
    });
    await chain.open();
    let iterations = 0;
    for (;;) {
      // Processing-time callbacks of chained operators run between batches.
      for (let mail = gate.poll(); mail !== undefined; mail = gate.poll()) {
        if (mail.kind === 'mail') await mail.run();
      }
      const result = await reader.poll(setup.batchSize);
      if (result.kind === 'end') break;
      if (result.kind === 'wait') {
        if (watermarks !== undefined && !idle && watermarks.checkIdle(clock.now())) {
          idle = true;
          chain.markIdle(true);
        }
        await gate.waitFor(result.retryAfterMs);
        continue;
      }
      const now = clock.now();
      let batch = result.batch;
      metrics.recordsOut += batch.values.length;
      if (watermarks !== undefined) {
        batch = watermarks.onBatch(batch, now) as typeof batch;
        for (const id of result.finishedSplits ?? []) watermarks.markFinished(id);
        if (idle) {
          idle = false;
          chain.markIdle(false);
        }
      }
      if (batch.values.length > 0) chain.pushBatch(batch, 0);
      if (watermarks !== undefined) {
        const wm = watermarks.advance();
        if (wm !== undefined) chain.pushWatermark(wm);
      }
      await chain.drain();
      if (chain.blocked) await chain.awaitCapacity();
      if (++iterations % YIELD_EVERY === 0) await yieldToEventLoop();
    }
    // End of bounded input: the final watermark fires every event-time timer, then operators finish.
    chain.pushWatermark(MAX_WATERMARK);
    await chain.drain();
    await chain.endInput();
    await chain.finishOutputs();
  } finally {
    await reader?.close();
  }
}
