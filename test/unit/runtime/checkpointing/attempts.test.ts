import { describe, expect, it } from 'vitest';
import { ConfigError, FencedError, JobFailedError } from '../../../../lib/core/index.ts';
import { CHECKPOINT_FORMAT_VERSION, type CheckpointMetadata } from '../../../../lib/checkpoint/types.ts';
import { runAttempts } from '../../../../lib/runtime/restarts/attempts.ts';
import type { CheckpointStorage } from '../../../../lib/storage/checkpoint-storage.ts';

const checkpoint = (checkpointId: number): CheckpointMetadata => ({
  version: CHECKPOINT_FORMAT_VERSION,
  checkpointId,
  savepoint: false,
  triggeredAt: 0,
  completedAt: 1,
  maxParallelism: 8,
  parallelism: {},
  tasks: [],
});

/** Storage whose newest checkpoint (6) turned out corrupt by the time of the restart; 5 is intact. */
const storage = {
  location: 'ck',
  latestComplete(onSkip?: (id: number, reason: string) => void) {
    onSkip?.(6, 'its sha256 differs');
    return Promise.resolve(checkpoint(5));
  },
} as unknown as CheckpointStorage;

/** Fails the first attempt, then reports where the second one started. */
function failingOnce(): { starts: (number | undefined)[]; attempt: (from: CheckpointMetadata | undefined) => Promise<string> } {
  const starts: (number | undefined)[] = [];
  return {
    starts,
    attempt: (from) => {
      starts.push(from?.checkpointId);
      return starts.length === 1 ? Promise.reject(new Error('task failed')) : Promise.resolve('done');
    },
  };
}

describe('runAttempts past a corrupt checkpoint', () => {
  it('fails the job rather than restart from an older checkpoint and replay its output', async () => {
    const run = failingOnce();
    const result = runAttempts({ strategy: { kind: 'fixed-delay', attempts: 3, delayMs: 0 }, storage, first: undefined, log: () => {}, attempt: run.attempt });
    await expect(result).rejects.toThrow(ConfigError);
    await expect(result).rejects.toThrow(/checkpoint 6 in ck is corrupt:.*falling back to checkpoint 5 would replay the output committed by checkpoint 6.*--allow-replay/s);
    expect(run.starts).toEqual([undefined]);
  });

  it('restarts from the older checkpoint with allowReplay, saying so', async () => {
    const run = failingOnce();
    const logs: string[] = [];
    const result = await runAttempts({
      strategy: { kind: 'fixed-delay', attempts: 3, delayMs: 0 },
      storage,
      first: undefined,
      allowReplay: true,
      log: (l) => logs.push(l),
      attempt: run.attempt,
    });
    expect(result).toBe('done');
    expect(run.starts).toEqual([undefined, 5]);
    expect(logs.some((l) => l.startsWith('warning: --allow-replay: checkpoint 6 corrupt; falling back to checkpoint 5'))).toBe(true);
  });
});

describe('runAttempts when a newer run fenced the storage', () => {
  it('fails at once with the FencedError, without a restart', async () => {
    const fenced = new FencedError('checkpoint storage ck', { attempt: 0, epoch: 8 }, { attempt: 0, epoch: 7 });
    const starts: (number | undefined)[] = [];
    const logs: string[] = [];
    const result = runAttempts({
      strategy: { kind: 'fixed-delay', attempts: 3, delayMs: 0 },
      storage,
      first: undefined,
      log: (l) => logs.push(l),
      attempt: (from) => {
        starts.push(from?.checkpointId);
        // As the runners report it: the task's failure wraps the cancellation the driver caused.
        return Promise.reject(new JobFailedError('task Map (1/1) failed', fenced));
      },
    });
    await expect(result).rejects.toBe(fenced);
    expect(starts).toEqual([undefined]);
    expect(logs.filter((l) => /restart/.test(l))).toEqual([]);
  });
});
