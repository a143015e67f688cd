import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { batchOf, systemClock } from '../../../lib/core/index.ts';
import { jsonlFileSink } from '../../../lib/connectors/local/index.ts';
import { SinkOperator } from '../../../lib/operators/basic/sink-operator.ts';
import type { OperatorContext } from '../../../lib/operators/operator.ts';

const root = mkdtempSync(join(tmpdir(), 'sluice-sink-op-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Attempt 'a' runs with epoch 1, 'b' with epoch 2. */
function context(attempt: string): OperatorContext {
  return {
    operatorName: 'sink',
    subtask: 0,
    parallelism: 1,
    maxParallelism: 128,
    keyGroupRange: { start: 0, end: 127 },
    clock: systemClock,
    keyedState: undefined,
    timers: undefined,
    checkpointing: true,
    fencing: { attempt: 0, epoch: attempt === 'a' ? 1 : 2 },
    currentWatermark: () => Number.NEGATIVE_INFINITY,
    requestProcessingTimeWakeup() {},
  };
}


describe('SinkOperator with the JSONL file sink: leftovers of earlier attempts', () => {
  it('are deleted once a checkpoint of the current attempt completes, even when it commits nothing of its own', async () => {
    const dir = join(root, 'out');
    // Attempt "a" pre-commits two checkpoints; checkpoint 1 completes (its file is what a restore commits), the
    // crash comes before checkpoint 2 does: its pending file belongs to no complete checkpoint.
    const a = new SinkOperator<string>('sink', jsonlFileSink<string>({ dir }));
    await a.open(context('a'));
    a.processBatch(batchOf(['x'], [0]));
    const state1 = await a.snapshotState(1);
    a.processBatch(batchOf(['y'], [0]));
    await a.snapshotState(2);
    expect(readdirSync(dir).filter((n) => n.endsWith('.pending'))).toHaveLength(2);

    // Attempt "b" restores checkpoint 1: it commits that file at open; then its first checkpoint completes with
    // nothing written (everything was before the restored checkpoint).
    const b = new SinkOperator<string>('sink', jsonlFileSink<string>({ dir }));
    b.initializeState(state1);
    await b.open(context('b'));
    expect(readdirSync(dir).sort()).toEqual(['.part-0-1.jsonl.e1-a0.pending', 'part-0-0.jsonl']);
    expect(await b.snapshotState(3)).toEqual([]);
    await b.notifyCheckpointComplete(3);
    expect(readdirSync(dir)).toEqual(['part-0-0.jsonl']);
    expect(existsSync(join(dir, 'part-0-1.jsonl'))).toBe(false);
    await b.close();
  });
});
