import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../../../lib/core/index.ts';
import type * as FaultInjectionModule from '../../../../lib/core/fault-injection.ts';

type FaultInjection = typeof FaultInjectionModule;

/** The module reads its variables once, at load: load a fresh copy under the given environment. */
async function load(env: { SLUICE_CRASH_AT?: string; SLUICE_FAIL_AT?: string }): Promise<FaultInjection> {
  vi.resetModules();
  vi.stubEnv('SLUICE_CRASH_AT', env.SLUICE_CRASH_AT ?? '');
  vi.stubEnv('SLUICE_FAIL_AT', env.SLUICE_FAIL_AT ?? '');
  return import('../../../../lib/core/fault-injection.ts');
}

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe('fault injection (SLUICE_CRASH_AT / SLUICE_FAIL_AT)', () => {
  it('does nothing when neither variable is set: both hooks are the same no-op', async () => {
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    const f = await load({});
    expect(f.crashPoint).toBe(f.failPoint);
    for (let i = 0; i < 5; i++) {
      f.crashPoint('after-metadata-commit');
      f.failPoint('snapshot');
    }
    expect(kill).not.toHaveBeenCalled();
  });

  it('throws at the n-th arrival of each listed fail point, once, and nowhere else', async () => {
    const f = await load({ SLUICE_FAIL_AT: 'snapshot:2, snapshot:4,restore:1' });
    expect(() => f.failPoint('restore')).toThrow(f.InjectedFailureError);
    expect(() => f.failPoint('restore')).not.toThrow();
    const outcomes = Array.from({ length: 5 }, () => {
      try {
        f.failPoint('snapshot');
        return 'ok';
      } catch (err) {
        expect(err).toBeInstanceOf(f.InjectedFailureError);
        expect((err as Error).message).toMatch(/injected failure at snapshot \(occurrence \d\b/);
        return 'thrown';
      }
    });
    expect(outcomes).toEqual(['ok', 'thrown', 'ok', 'thrown', 'ok']);
  });

  it('sends SIGKILL to its own process at the n-th arrival of a crash point', async () => {
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    const f = await load({ SLUICE_CRASH_AT: 'after-prepare-commit:3' });
    f.crashPoint('after-metadata-commit');
    f.crashPoint('after-prepare-commit');
    f.crashPoint('after-prepare-commit');
    expect(kill).not.toHaveBeenCalled();
    f.crashPoint('after-prepare-commit');
    expect(kill).toHaveBeenCalledTimes(1);
    expect(kill).toHaveBeenCalledWith(process.pid, 'SIGKILL');
    f.crashPoint('after-prepare-commit');
    expect(kill).toHaveBeenCalledTimes(1);
  });

  it.each(['snapshot', 'snapshot:0', 'snapshot:x', 'checkpoint:1', 'snapshot:1;restore:2'])(
    'refuses the malformed SLUICE_FAIL_AT "%s" at load',
    async (value) => {
      // A fresh module graph has its own ConfigError class: compare by name.
      await expect(load({ SLUICE_FAIL_AT: value })).rejects.toMatchObject({ name: ConfigError.name, message: expect.stringMatching(/^SLUICE_FAIL_AT: ".*" is not <point>:<n>/) });
    },
  );

  it('refuses a fail point in SLUICE_CRASH_AT', async () => {
    await expect(load({ SLUICE_CRASH_AT: 'snapshot:1' })).rejects.toThrow(/SLUICE_CRASH_AT: "snapshot:1" is not <point>:<n>/);
  });

  it('fails every checkpoint storage write from the n-th on with `<point>:<n>+`, as a full disk would', async () => {
    const f = await load({ SLUICE_FAIL_AT: 'checkpoint-write:3+' });
    expect(f.injectsDiskFull).toBe(true);
    const outcomes = Array.from({ length: 6 }, () => {
      try {
        f.diskFullPoint();
        return 'ok';
      } catch (err) {
        expect(err).toBeInstanceOf(f.InjectedDiskFullError);
        expect((err as { code: string }).code).toBe('ENOSPC');
        expect((err as Error).message).toMatch(/^ENOSPC: no space left on device/);
        return 'ENOSPC';
      }
    });
    expect(outcomes).toEqual(['ok', 'ok', 'ENOSPC', 'ENOSPC', 'ENOSPC', 'ENOSPC']);
    expect((await load({ SLUICE_FAIL_AT: 'snapshot:1' })).injectsDiskFull).toBe(false);
  });

  it('refuses `<n>+` for crash points: a process can crash only once', async () => {
    await expect(load({ SLUICE_CRASH_AT: 'during-commit:2+' })).rejects.toThrow(/"during-commit:2\+" is not <point>:<n> with n >= 1/);
  });
});
