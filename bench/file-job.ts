import { mkdtempSync, openSync, readSync, closeSync, writeFileSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runOnThreads } from 'sluice';

/** Writes `events` transaction lines, slightly out of order, like the example's input. */
function writeInput(path: string, events: number): void {
  const lines: string[] = [];
  const parts: string[] = [];
  let seed = 12345;
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  for (let i = 0; i < events; i++) {
    const ts = 1_700_000_000_000 + i - Math.floor(rand() * 2000);
    lines.push(JSON.stringify({ account: `a-${Math.floor(rand() * 10_000)}`, amountCents: 1 + Math.floor(rand() * 100_000), ts }));
    if (lines.length === 100_000) {
      parts.push(lines.join('\n'));
      lines.length = 0;
    }
  }
  parts.push(lines.join('\n'));
  writeFileSync(path, parts.join('\n') + '\n');
}

/** The same job as a plain single-threaded loop: read, split, JSON.parse, window by account, write JSONL. */
function baseline(input: string, output: string): number {
  const fd = openSync(input, 'r');
  const buf = Buffer.allocUnsafe(1 << 20);
  const windows = new Map<number, Map<string, { count: number; total: number }>>();
  let maxTs = Number.NEGATIVE_INFINITY;
  let carry = '';
  const out: string[] = [];
  const fire = (wm: number) => {
    for (const [start, accounts] of windows) {
      if (start + 10_000 - 1 > wm) continue;
      for (const [account, a] of accounts) {
        out.push(JSON.stringify({ account, windowStart: start, windowEnd: start + 10_000, count: a.count, totalCents: a.total }));
      }
      windows.delete(start);
    }
  };
  for (;;) {
    const n = readSync(fd, buf, 0, buf.length, null);
    if (n === 0) break;
    const text = carry + buf.toString('utf8', 0, n);
    const lines = text.split('\n');
    carry = lines.pop() ?? '';
    for (const line of lines) {
      if (line.length === 0) continue;
      const t = JSON.parse(line) as { account: string; amountCents: number; ts: number };
      const start = t.ts - (t.ts % 10_000);
      let accounts = windows.get(start);
      if (accounts === undefined) windows.set(start, (accounts = new Map()));
      const a = accounts.get(t.account);
      if (a === undefined) accounts.set(t.account, { count: 1, total: t.amountCents });
      else {
        a.count++;
        a.total += t.amountCents;
      }
      if (t.ts > maxTs) maxTs = t.ts;
    }
    fire(maxTs - 5_000 - 1);
  }
  closeSync(fd);
  fire(Number.POSITIVE_INFINITY);
  writeFileSync(join(output, 'baseline.jsonl'), out.join('\n') + '\n');
  return out.length;
}

export async function fileJobBenchmark(events: number): Promise<{ jobRate: number; baselineRate: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  try {
    const input = join(dir, 'input.jsonl');
    writeInput(input, events);
    mkdirSync(join(dir, 'baseline'));
    let start = performance.now();
    baseline(input, join(dir, 'baseline'));
    const baselineRate = events / ((performance.now() - start) / 1000);
    start = performance.now();
    await runOnThreads({
      modulePath: fileURLToPath(new URL('../examples/fraud-detection.ts', import.meta.url)),
      flags: { input, output: join(dir, 'out'), maxDelayMs: 5_000, windowMs: 10_000 },
      jobOptions: { parallelism: 1 },
    });
    const jobRate = events / ((performance.now() - start) / 1000);
    return { jobRate, baselineRate };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
