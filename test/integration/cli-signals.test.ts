import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSluice } from './sluice-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'sluice-signals-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('sluice run stopped by a signal', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)('stops promptly on %s with exit code %i', async (signal, expected) => {
    const output = join(dir, signal);
    const { child, done } = startSluice(['run', 'test/fixtures/endless-job.ts', '--output', output, '--parallelism', '2']);
    // Running: the sink has created its in-progress file.
    await waitFor(() => {
      try {
        return readdirSync(output).length > 0;
      } catch {
        return false;
      }
    }, 20_000);
    const sentAt = Date.now();
    child.kill(signal);
    const run = await done;
    // Promptly: not after the endless input; the bound leaves room for a loaded machine (a hang never ends).
    expect(Date.now() - sentAt).toBeLessThan(10_000);
    expect(run.code, run.stderr).toBe(expected);
    expect(run.stderr).toContain(`sluice: ${signal} received, stopping`);
    // Nothing unfinished looks finished: the open part file keeps its hidden in-progress name.
    for (const f of readdirSync(output)) expect(f.startsWith('.') || /^part-\d+-\d+\.jsonl$/.test(f)).toBe(true);
  });
});
