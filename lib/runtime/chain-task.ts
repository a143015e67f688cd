import { END_OF_DATA, type BarrierElement } from '../core/index.ts';
import type { InputGate } from './input-gate.ts';
import type { OperatorChain } from './operator-chain.ts';
import { WatermarkValve } from './watermark-valve.ts';
import { yieldToEventLoop } from './yield.ts';
import type { TaskMetrics } from './task-metrics.ts';
import type { LateDropWarnings } from './late-drop-warnings.ts';
import type { CheckpointParticipant } from './checkpoint-driver/participant.ts';
import { waitingForFirstBarrier, type AlignmentState, type AlignmentStep } from '../checkpoint/barrier-aligner.ts';

export interface ChainTaskSetup {
  readonly vertex: number;
  readonly vertexName: string;
  readonly subtask: number;
  readonly chain: OperatorChain;
  readonly gate: InputGate;
  /** Input index (0 or 1) of each gate channel. */
  readonly inputIndexOfChannel: readonly number[];
  readonly metrics: TaskMetrics;
  readonly lateDrops: LateDropWarnings;
  readonly checkpoints: CheckpointParticipant;
}

/**
 * Runs a vertex subtask that reads from channels: batches go into the chain head, watermarks are combined over
 * the channels (min over active inputs), checkpoint barriers are aligned (a channel that delivered barrier n is
 * not read again until every channel has), and once every channel reached the end of its data the chain flushes.
 * With checkpointing, the task ends only after the final checkpoint it took part in is complete, so its sinks
 * have committed.
 */
export async function runChainTask(setup: ChainTaskSetup): Promise<void> {
  const { chain, gate, metrics, checkpoints } = setup;
  const channels = gate.channelCount;
  const valve = new WatermarkValve(channels);
  let alignment: AlignmentState = waitingForFirstBarrier(channels);
  const endedData = new Array<boolean>(channels).fill(false);
  let dataOpen = channels;
  let open = channels;
  let idle = false;
  let lastBarrier: BarrierElement | undefined;

  const endData = async (channel: number): Promise<void> => {
    if (endedData[channel]) return;
    endedData[channel] = true;
    if (--dataOpen === 0) {
      await chain.endInput();
      chain.broadcast(END_OF_DATA);
    }
  };
  const snapshot = async (barrier: BarrierElement): Promise<void> => {
    const started = performance.now();
    const operators = await chain.snapshot(barrier.checkpointId, barrier.savepoint);
    chain.broadcast(barrier);
    const syncMs = performance.now() - started;
    checkpoints.acknowledge(setup.vertexName, barrier.checkpointId, { vertex: setup.vertex, subtask: setup.subtask, operators }, syncMs);
    lastBarrier = barrier;
  };
  const applyAlignment = async (step: AlignmentStep): Promise<void> => {
    alignment = step.state;
    // A subsumed or cancelled checkpoint is simply not acknowledged here; the coordinator aborts it on timeout.
    for (const action of step.actions) if (action.kind === 'snapshot') await snapshot(action.barrier);
    for (let c = 0; c < channels; c++) gate.setBlocked(c, alignment.isBlocked(c));
  };

  await chain.open();
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
        case 'barrier':
          await applyAlignment(alignment.barrierReceived(channel, element));
          break;
        case 'end-of-data':
          await endData(channel);
          break;
        case 'end':
          open--;
          advanced = valve.onEnd(channel);
          await endData(channel);
          await applyAlignment(alignment.endOfInput(channel));
          break;
      }
      if (valve.isIdle !== idle) {
        idle = valve.isIdle;
        chain.markIdle(idle);
      }
      if (advanced !== undefined) chain.pushWatermark(advanced);
      metrics.droppedLateRecords = chain.droppedLateRecords();
      setup.lateDrops.update(metrics.droppedLateRecords, performance.now());
    }
    await chain.drain();
    if (chain.blocked) await chain.awaitCapacity();
    await yieldToEventLoop();
  }
  if (checkpoints.enabled && lastBarrier !== undefined) {
    // Sources end their channels only after the final checkpoint completed; wait for this thread to hear of it
    // and run the completion hooks (sink commits) queued in the mailbox.
    await checkpoints.completed(lastBarrier.checkpointId);
    for (let event = gate.poll(); event !== undefined; event = gate.poll()) {
      if (event.kind === 'mail') await event.run();
    }
    await chain.drain();
  }
  await chain.finishOutputs();
}
