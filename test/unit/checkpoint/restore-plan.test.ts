import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { markerAfterStop, planRestart, planRestore, planStartup } from '../../../lib/checkpoint/restore-plan.ts';
import { ConfigError } from '../../../lib/core/index.ts';
import { restoreSourceOf } from '../../../lib/runtime/restore/external-restore.ts';

const bad = (checkpointId: number) => ({ checkpointId, reason: `damaged ${checkpointId}` });

describe('planRestore', () => {
  it('goes ahead without a word when nothing newer is corrupt', () => {
    expect(planRestore({ location: 'ck', corrupt: [], start: { kind: 'checkpoint', checkpointId: 3 }, allowReplay: false })).toEqual({ warnings: [] });
    expect(planRestore({ location: 'ck', corrupt: [], start: { kind: 'beginning' }, allowReplay: false })).toEqual({ warnings: [] });
  });

  it('refuses a fallback that replays committed output, naming the checkpoints, the reasons and --allow-replay', () => {
    const run = () =>
      planRestore({ location: 'ck', corrupt: [bad(14), bad(12), bad(13)], start: { kind: 'checkpoint', checkpointId: 11 }, allowReplay: false });
    expect(run).toThrow(ConfigError);
    expect(run).toThrow(
      'checkpoints 12..14 in ck are corrupt:\n  checkpoint 12: damaged 12\n  checkpoint 13: damaged 13\n  checkpoint 14: damaged 14\n' +
        'falling back to checkpoint 11 would replay the output committed by checkpoints 12..14, so the sinks would receive it twice. ' +
        'Pass --allow-replay to fall back anyway, or --fresh to start over from the beginning',
    );
  });

  it('accepts the fallback with --allow-replay and says what it replays', () => {
    const plan = planRestore({ location: 'ck', corrupt: [bad(9)], start: { kind: 'savepoint', description: 'savepoint /sp' }, allowReplay: true });
    expect(plan.warnings).toEqual([
      'warning: --allow-replay: checkpoint 9 corrupt; falling back to savepoint /sp (restore.json) would replay the output committed by checkpoint 9 (duplicates in the output)',
    ]);
  });

  it('never starts from the beginning past corrupt checkpoints, even with --allow-replay', () => {
    for (const allowReplay of [false, true]) {
      expect(() => planRestore({ location: 'ck', corrupt: [bad(2), bad(4)], start: { kind: 'beginning' }, allowReplay })).toThrow(
        /checkpoints 2, 4 in ck are corrupt:.*would start from the beginning and write again all output committed by checkpoints 2, 4\. Start over on purpose with --fresh/s,
      );
    }
  });

  it('ignores corrupt checkpoints at or below the floor: they predate the restore and replay nothing of this job', () => {
    const plan = planRestore({ location: 'ck', corrupt: [bad(5), bad(6)], floor: 6, start: { kind: 'savepoint', description: 's' }, allowReplay: false });
    expect(plan.warnings).toEqual([]);
  });
});

describe('planStartup', () => {
  const marker = { source: '/sp/savepoint-7', checkpointId: 7, floor: 10 };
  const base = { location: 'ck', fresh: false, marker: undefined, checkpointIds: [], latestComplete: undefined };

  it('starts from the folder`s latest complete checkpoint, or the beginning, without a marker', () => {
    expect(planStartup({ ...base, checkpointIds: [3, 4, 5], latestComplete: 4 })).toEqual({
      discard: [],
      removeMarker: false,
      from: 'checkpoint',
      newMarkerFloor: undefined,
      floor: undefined,
      highestCheckpointId: 5,
      notes: [],
    });
    expect(planStartup(base)).toMatchObject({ from: 'checkpoint', highestCheckpointId: 0 });
  });

  it('never reuses the id of a checkpoint removed as incomplete', () => {
    expect(planStartup({ ...base, checkpointIds: [3], removedIds: [9], latestComplete: 3 }).highestCheckpointId).toBe(9);
  });

  it('continues from the marker`s savepoint while no checkpoint above its floor completed, saying so', () => {
    const plan = planStartup({ ...base, marker, checkpointIds: [9, 10], latestComplete: 10 });
    expect(plan).toMatchObject({ from: 'marker', floor: 10, newMarkerFloor: undefined });
    expect(plan.notes).toEqual([
      'the job in ck started from or was stopped with /sp/savepoint-7, and has completed no checkpoint since: continuing from it',
    ]);
  });

  it('resumes from the folder`s own checkpoint once one above the floor completed, keeping the floor for restarts', () => {
    expect(planStartup({ ...base, marker, checkpointIds: [10, 11], latestComplete: 11 })).toMatchObject({ from: 'checkpoint', floor: 10, notes: [] });
  });

  it('starts from a new --restore and records it with the folder`s highest id as floor', () => {
    const plan = planStartup({ ...base, restore: 'sp/x', restoreSource: '/abs/sp/x', marker, checkpointIds: [11, 12], latestComplete: 12 });
    expect(plan).toMatchObject({ from: 'restore', newMarkerFloor: 12, floor: 12, notes: [] });
    expect(planStartup({ ...base, restore: '/abs/sp/x', checkpointIds: [], latestComplete: undefined })).toMatchObject({ from: 'restore', newMarkerFloor: 0 });
  });

  it('treats a --restore the marker already names as the marker: its own later checkpoints win', () => {
    const again = { ...base, restore: 'sp/7', restoreSource: marker.source, marker };
    expect(planStartup({ ...again, checkpointIds: [10], latestComplete: 10 })).toMatchObject({ from: 'marker', notes: [] });
    expect(planStartup({ ...again, checkpointIds: [10, 11], latestComplete: 11 })).toMatchObject({
      from: 'checkpoint',
      notes: ['--restore sp/7: the job in ck was restored from it before; resuming from its latest checkpoint'],
    });
  });

  it('keeps an s3:// --restore as given: the restore.json a stop in S3 wrote names the same savepoint', () => {
    const uri = 's3://bucket/job/savepoints/savepoint-0000000007-1700000000000';
    expect(restoreSourceOf(uri)).toBe(uri);
    expect(restoreSourceOf(`${uri}/`)).toBe(uri);
    expect(restoreSourceOf('sp/x')).toBe(resolve('sp/x'));
    const stopped = { source: uri, checkpointId: 7, floor: 10 };
    const again = { ...base, restore: uri, restoreSource: restoreSourceOf(uri), marker: stopped };
    expect(planStartup({ ...again, checkpointIds: [10], latestComplete: 10 })).toMatchObject({ from: 'marker', notes: [] });
    expect(planStartup({ ...again, checkpointIds: [10, 11], latestComplete: 11 })).toMatchObject({ from: 'checkpoint' });
  });

  it('with --fresh discards every checkpoint and the marker, and ignores both', () => {
    const plan = planStartup({ ...base, fresh: true, marker, checkpointIds: [12, 11, 12], removedIds: [13], latestComplete: 12 });
    expect(plan).toEqual({
      discard: [11, 12],
      removeMarker: true,
      from: 'checkpoint',
      newMarkerFloor: undefined,
      floor: undefined,
      highestCheckpointId: 13,
      notes: [],
    });
    // --fresh with --restore: the savepoint, recorded above every id used so far.
    expect(planStartup({ ...base, fresh: true, restore: '/sp/y', marker, checkpointIds: [12] })).toMatchObject({ from: 'restore', newMarkerFloor: 12 });
  });
});

describe('planRestart', () => {
  it('takes the latest checkpoint without a floor', () => {
    expect(planRestart({ floor: undefined, latestComplete: 3 })).toBe('latest');
    expect(planRestart({ floor: undefined, latestComplete: undefined })).toBe('latest');
  });

  it('takes the savepoint the run started from again until a checkpoint above the floor completed', () => {
    expect(planRestart({ floor: 10, latestComplete: undefined })).toBe('first');
    expect(planRestart({ floor: 10, latestComplete: 10 })).toBe('first');
    expect(planRestart({ floor: 10, latestComplete: 11 })).toBe('latest');
  });
});

describe('markerAfterStop', () => {
  it('makes the folder continue from the stop`s savepoint, never from an older checkpoint', () => {
    expect(markerAfterStop({ path: '/sp/savepoint-0000000012-5', checkpointId: 12 })).toEqual({ source: '/sp/savepoint-0000000012-5', checkpointId: 12, floor: 12 });
  });
});
