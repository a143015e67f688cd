// State larger than the heap: 20 million keys in RocksDB while the process may use 512 MB of JS heap (the memory
// backend would need several GB for the same state). The job stores one value per key, then reads a sample back;
// its summary must equal a plain computation. Slow (minutes): it is the one test of this size. A second run keeps a
// pending event-time timer per key for 2 million keys under 256 MB, where heap timers alone would need ~290 MB
// (143 bytes each), and fires them all under the final watermark (~85 s).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { storedValue } from '../fixtures/large-state-job.ts';

const KEYS = Number(process.env['SLUICE_LARGE_STATE_KEYS'] ?? 20_000_000);
const TIMER_KEYS = Number(process.env['SLUICE_LARGE_TIMER_KEYS'] ?? 2_000_000);
const SAMPLE = 20;
const HEAP_MB = 512;
const TIMER_HEAP_MB = 256;
const dir = mkdtempSync(join(tmpdir(), 'sluice-large-state-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: readonly string[], heapMb = HEAP_MB): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [`--max-old-space-size=${heapMb}`, 'bin/sluice.js', ...args], {
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
    expect(JSON.parse(readFileSync(summary, 'utf8'))).toEqual({ checked, sum, missing: 0, fired: 0, firedSum: 0, wrong: 0 });
  }, 30 * 60_000);

  it(`keeps ${TIMER_KEYS.toLocaleString('en')} pending timers in RocksDB under --max-old-space-size=${TIMER_HEAP_MB} and fires each once`, async () => {
    const summary = join(dir, 'timers.json');
    const result = await run(
      [
        'run', 'test/fixtures/large-state-job.ts',
        '--keys', String(TIMER_KEYS),
        '--sample', String(SAMPLE),
        '--summary', summary,
        '--timers',
        '--state-backend', 'rocksdb',
        '--state-dir', join(dir, 'timer-state'),
      ],
      TIMER_HEAP_MB,
    );
    expect(result.code, result.stderr).toBe(0);
    let sum = 0;
    let checked = 0;
    let firedSum = 0;
    for (let k = 0; k < TIMER_KEYS; k++) {
      firedSum += storedValue(k);
      if (k % SAMPLE === 0) {
        sum += storedValue(k);
        checked++;
      }
    }
    expect(JSON.parse(readFileSync(summary, 'utf8'))).toEqual({ checked, sum, missing: 0, fired: TIMER_KEYS, firedSum, wrong: 0 });
  }, 30 * 60_000);
});
