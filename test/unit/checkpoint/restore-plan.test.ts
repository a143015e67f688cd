import { describe, expect, it } from 'vitest';
import { planRestore } from '../../../lib/checkpoint/restore-plan.ts';
import { ConfigError } from '../../../lib/core/index.ts';

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
