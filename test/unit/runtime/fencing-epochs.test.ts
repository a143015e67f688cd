import { describe, expect, it } from 'vitest';
import type { CheckpointMetadata } from '../../../lib/checkpoint/types.ts';
import type { StoredCheckpoint } from '../../../lib/storage/checkpoint-storage.ts';
import { highestRecordedEpoch, issueFencingToken } from '../../../lib/runtime/fencing-epochs.ts';

function metadata(checkpointId: number, epoch: number | undefined): CheckpointMetadata {
  const base = { checkpointId } as unknown as CheckpointMetadata;
  return epoch === undefined ? base : { ...base, fencing: { attempt: 0, epoch } };
}

const storageOf = (stored: StoredCheckpoint[], fence?: { attempt: number; epoch: number }) => ({
  list: () => Promise.resolve(stored),
  currentFence: () => Promise.resolve(fence),
});

describe('fencing epochs of a run', () => {
  it('finds the highest epoch recorded in complete checkpoints and in the restored savepoint', async () => {
    expect(await highestRecordedEpoch(storageOf([]), undefined)).toBe(-1);
    const stored: StoredCheckpoint[] = [
      { status: 'complete', checkpointId: 1, metadata: metadata(1, 40) },
      { status: 'corrupt', checkpointId: 2, reason: 'bad' },
      { status: 'complete', checkpointId: 3, metadata: metadata(3, 12) },
    ];
    expect(await highestRecordedEpoch(storageOf(stored), undefined)).toBe(40);
    expect(await highestRecordedEpoch(storageOf(stored), metadata(9, 77))).toBe(77);
    // Checkpoints from before tokens were recorded count as epoch 0.
    expect(await highestRecordedEpoch(storageOf([{ status: 'complete', checkpointId: 1, metadata: metadata(1, undefined) }]), undefined)).toBe(0);
    // The storage's fence counts too: an attempt that raised it and crashed before its first checkpoint.
    expect(await highestRecordedEpoch(storageOf(stored, { attempt: 3, epoch: 90 }), metadata(9, 77))).toBe(90);
  });

  it('issues strictly growing epochs: above the previous attempt, above what is recorded, never below the clock', () => {
    const first = issueFencingToken(undefined, -1, 1_000);
    expect(first.attempt).toBe(0);
    expect(first.epoch).toBeGreaterThanOrEqual(1_000);
    const restart = issueFencingToken(first, -1, 1_000);
    expect(restart).toEqual({ attempt: 1, epoch: first.epoch + 1 });
    // A run whose storage records a higher epoch (e.g. written on a machine whose clock runs ahead) starts above it.
    const recorded = restart.epoch + 1_000_000;
    expect(issueFencingToken(undefined, recorded, 1_000)).toEqual({ attempt: 0, epoch: recorded + 1 });
    // Two runs started in the same millisecond in one process never share an epoch.
    const a = issueFencingToken(undefined, -1, 5_000);
    const b = issueFencingToken(undefined, -1, 5_000);
    expect(b.epoch).toBeGreaterThan(a.epoch);
    // With nothing recorded, a later run still starts above an earlier one: the clock has moved on.
    const now = Date.now();
    expect(issueFencingToken(undefined).epoch).toBeGreaterThanOrEqual(now);
  });
});
