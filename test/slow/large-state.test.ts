// State larger than the heap: 20 million keys in RocksDB while the process may use 512 MB of JS heap (the memory
// backend would need several GB for the same state). The job stores one value per key, then reads a sample back;
// its summary must equal a plain computation. Slow (minutes): it is the one test of this size.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { storedValue } from '../fixtures/large-state-job.ts';

const KEYS = Number(process.env['SLUICE_LARGE_STATE_KEYS'] ?? 20_000_000);
const SAMPLE = 20;
const HEAP_MB = 512;
const dir = mkdtempSync(join(tmpdir(), 'sluice-large-state-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [`--max-old-space-size=${HEAP_MB}`, 'bin/sluice.js', ...args], {
      cwd: join(import.meta.dirname, '..', '..'),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

describe(`state larger than the heap (${KEYS.toLocaleString('en')} keys, --max-old-space-size=${HEAP_MB})`, () => {
  it('completes on the RocksDB backend with exact results', async () => {
    const summary = join(dir, 'summary.json');
    const result = await run([
      'run', 'test/fixtures/large-state-job.ts',
      '--keys', String(KEYS),
      '--sample', String(SAMPLE),
      '--summary', summary,
      '--state-backend', 'rocksdb',
      '--state-dir', join(dir, 'state'),
    ]);
    expect(result.code, result.stderr).toBe(0);
    let sum = 0;
    let checked = 0;
    for (let k = 0; k < KEYS; k += SAMPLE) {
      sum += storedValue(k);
      checked++;
    }
    expect(JSON.parse(readFileSync(summary, 'utf8'))).toEqual({ checked, sum, missing: 0 });
  }, 30 * 60_000);
});
