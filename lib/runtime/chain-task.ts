import type { InputGate } from './input-gate.ts';
import type { OperatorChain } from './operator-chain.ts';
import { WatermarkValve } from './watermark-valve.ts';
import { YIELD_EVERY, yieldToEventLoop } from './yield.ts';
import type { TaskMetrics } from './task-metrics.ts';

export interface ChainTaskSetup {
  readonly chain: OperatorChain;
  readonly gate: InputGate;
  /** Input index (0 or 1) of each gate channel. */
  readonly inputIndexOfChannel: readonly number[];
  readonly metrics: TaskMetrics;
}

/**
 * Runs a vertex subtask that reads from channels: batches go into the chain head, watermarks are combined over
 * the channels (min over active inputs), and when every channel has ended the chain finishes.
 */
export async function runChainTask(setup: ChainTaskSetup): Promise<void> {
  const { chain, gate, metrics } = setup;
  const valve = new WatermarkValve(gate.channelCount);
  let open = gate.channelCount;
  let idle = false;
  await chain.open();
  let iterations = 0;
  while (open > 0) {
    const event = await gate.take();
    if (event.kind === 'mail') {
      await event.run();
    } else {
      const { channel, element } = event;
      let advanced: number | undefined;
      switch (element.kind) {
        case 'batch':
          metrics.recordsIn += element.batch.values.length;
          chain.pushBatch(element.batch, setup.inputIndexOfChannel[channel] as number);
          break;
        case 'watermark':
          advanced = valve.onWatermark(channel, element.timestamp);
          break;
        case 'idle':
          advanced = valve.onIdle(channel, element.idle);
          break;
        case 'end':
          open--;
          advanced = valve.onEnd(channel);
          break;
        case 'barrier':
          // Checkpoint barriers are aligned here once checkpointing exists; nothing produces them yet.
          break;
      }
      if (valve.isIdle !== idle) {
        idle = valve.isIdle;
        chain.markIdle(idle);
      }
      if (advanced !== undefined) chain.pushWatermark(advanced);
    }
    await chain.drain();
    if (chain.blocked) await chain.awaitCapacity();
    if (++iterations % YIELD_EVERY === 0) await yieldToEventLoop();
  }
  await chain.endInput();
  await chain.finishOutputs();
}
