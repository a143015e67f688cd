import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { batchOf, systemClock } from '../../../lib/core/index.ts';
import { jsonlFileSink } from '../../../lib/connectors/local/index.ts';
import { SinkOperator } from '../../../lib/operators/basic/sink-operator.ts';
import type { OperatorContext } from '../../../lib/operators/operator.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-sink-coord-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A cluster slot's sink: the coordinator commits, the operator never does. */
const context: OperatorContext = {
  operatorName: 'sink',
  subtask: 0,
  parallelism: 1,
  maxParallelism: 128,
  keyGroupRange: { start: 0, end: 127 },
  clock: systemClock,
  keyedState: undefined,
  timers: undefined,
  checkpointing: true,
  sinkCommitMode: 'coordinator',
  fencing: { attempt: 0, epoch: 1 },
  currentWatermark: () => Number.NEGATIVE_INFINITY,
  requestProcessingTimeWakeup() {},
};

const ids = (state: unknown[]): number[] => state.map((p) => (p as { checkpointId: number }).checkpointId);

describe('SinkOperator in coordinator commit mode', () => {
  it('carries the committables of an aborted checkpoint into the next one, drops them once one completes, commits nothing', async () => {
    const dir = join(root, 'out');
    const op = new SinkOperator<string>('sink', jsonlFileSink<string>({ dir }));
    await op.open(context);
    op.processBatch(batchOf(['x'], [0]));
    expect(ids(await op.snapshotState(1))).toEqual([1]);
    // Checkpoint 1 is aborted (no completion): its output must go with checkpoint 2, or it is never committed.
    op.processBatch(batchOf(['y'], [0]));
    expect(ids(await op.snapshotState(2))).toEqual([1, 2]);
    await op.notifyCheckpointComplete(2);
    op.processBatch(batchOf(['z'], [0]));
    expect(ids(await op.snapshotState(3))).toEqual([3]);
    // Only the coordinator commits: every file is still pending.
    expect(readdirSync(dir).filter((n) => !n.endsWith('.pending'))).toEqual([]);
    await op.close();
  });
});
