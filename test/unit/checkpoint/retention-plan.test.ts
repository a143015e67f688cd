import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../lib/core/index.ts';
import { planRetention, type FoundCheckpoint } from '../../../lib/checkpoint/retention-plan.ts';
import { taskStatePath } from '../../../lib/checkpoint/naming.ts';
import { CHECKPOINT_FORMAT_VERSION, type CheckpointMetadata, type TaskStateHandle } from '../../../lib/checkpoint/types.ts';

const TASK = { vertex: 0, subtask: 0 };

/** A task handle whose file lives in checkpoint `fileOf`'s directory, listing `shared` files. */
function handle(fileOf: number, shared: readonly string[] = []): TaskStateHandle {
  return {
    task: TASK,
    vertexName: 'v',
    path: taskStatePath({ kind: 'checkpoint', checkpointId: fileOf }, TASK),
    bytes: 1,
    sha256: 'd'.repeat(64),
    ...(shared.length > 0 ? { sharedFiles: shared.map((path) => ({ path, bytes: 1, sha256: 'e'.repeat(64) })) } : {}),
  };
}

function complete(checkpointId: number, options: { savepoint?: boolean; fileOf?: number; shared?: string[] } = {}): FoundCheckpoint {
  const metadata: CheckpointMetadata = {
    version: CHECKPOINT_FORMAT_VERSION,
    checkpointId,
    savepoint: options.savepoint === true,
    triggeredAt: checkpointId,
    completedAt: checkpointId,
    maxParallelism: 8,
    parallelism: { 0: 1 },
    tasks: [handle(options.fileOf ?? checkpointId, options.shared)],
  };
  return { status: 'complete', checkpointId, metadata };
}

describe('planRetention', () => {
  it('keeps the newest `retain` complete checkpoints and discards every older one, in ascending order', () => {
    const found = [complete(5), complete(2), complete(4), complete(3), complete(1)];
    expect(planRetention(found, 2)).toEqual({ discard: [1, 2, 3], freedSharedFiles: [] });
    expect(planRetention(found, 5)).toEqual({ discard: [], freedSharedFiles: [] });
  });

  it('discards nothing while fewer than `retain` complete checkpoints exist', () => {
    expect(planRetention([complete(1), { status: 'incomplete', checkpointId: 2 }], 3)).toEqual({ discard: [], freedSharedFiles: [] });
  });

  it('neither counts nor removes savepoints', () => {
    const found = [complete(1), complete(2, { savepoint: true }), complete(3), complete(4, { savepoint: true })];
    expect(planRetention(found, 1).discard).toEqual([1]);
    expect(planRetention(found, 2).discard).toEqual([]);
  });

  it('discards corrupt and incomplete checkpoints older than the oldest retained, keeps newer ones', () => {
    const found: FoundCheckpoint[] = [
      { status: 'corrupt', checkpointId: 1 },
      { status: 'incomplete', checkpointId: 2 },
      complete(3),
      { status: 'incomplete', checkpointId: 4 },
      complete(5),
    ];
    expect(planRetention(found, 2).discard).toEqual([1, 2]);
  });

  it('keeps an old checkpoint whose files a retained checkpoint points into', () => {
    // Checkpoint 4 reuses the task file written in checkpoint 1's directory.
    const found = [complete(1), complete(2), complete(3), complete(4, { fileOf: 1 })];
    expect(planRetention(found, 1).discard).toEqual([2, 3]);
  });

  it('frees shared files only when no remaining checkpoint lists them', () => {
    const found = [
      complete(1, { shared: ['shared/a.sst', 'shared/b.sst'] }),
      complete(2, { shared: ['shared/b.sst', 'shared/c.sst'] }),
      complete(3, { shared: ['shared/c.sst', 'shared/d.sst'] }),
    ];
    expect(planRetention(found, 2)).toEqual({ discard: [1], freedSharedFiles: ['shared/a.sst'] });
    expect(planRetention(found, 1)).toEqual({ discard: [1, 2], freedSharedFiles: ['shared/a.sst', 'shared/b.sst'] });
    // A savepoint's references hold files as well.
    const withSavepoint = [...found, complete(4, { savepoint: true, shared: ['shared/a.sst'] })];
    expect(planRetention(withSavepoint, 2).freedSharedFiles).toEqual([]);
  });

  it('refuses a retain count below 1', () => {
    for (const retain of [0, -1, 1.5, Number.NaN]) expect(() => planRetention([complete(1)], retain)).toThrow(ConfigError);
  });
});
