import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CPU_LINE, MEASUREMENT_LINE } from '../../bench/nexmark/timing.ts';
import { runSluice } from '../integration/sluice-process.ts';
import { referenceQ4, referenceQ5 } from './reference-queries.ts';
import { allEvents, canonical } from './run-query.ts';

const JOB = 'bench/nexmark/nexmark.ts';
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function readResults(dir: string): unknown[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l.length > 0))
    .map((l) => JSON.parse(l) as unknown);
}

describe('sluice run bench/nexmark/nexmark.ts', () => {
  it('ends with the measurement line', async () => {
    const run = await runSluice(['run', JOB, '--query', 'q5', '--events', '200000', '--rate', '10000', '--parallelism', '2']);
    expect(run.stderr).toContain('finished: 200,000 records read');
    expect(run.code).toBe(0);
    const last = run.stdout.trimEnd().split('\n').at(-1) ?? '';
    const m = MEASUREMENT_LINE.exec(last);
    expect(m, last).not.toBeNull();
    expect(m![1]).toBe('q5');
    expect(Number(m![2])).toBe(200_000);
    expect(Number(m![4])).toBeCloseTo(200_000 / Number(m![3]), -4);
    // Before it, on stderr, the Nexmark suite's metric: events per CPU-second of all threads.
    const cpu = CPU_LINE.exec(run.stderr);
    expect(cpu, run.stderr).not.toBeNull();
    expect(Number(cpu![2])).toBeGreaterThan(0);
  });

  it('refuses an unknown query', async () => {
    const run = await runSluice(['run', JOB, '--query', 'q6', '--events', '1000']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/q6/);
  });

  it.each([
    ['q4', (events: ReturnType<typeof allEvents>) => referenceQ4(events), ['category', 'averagePrice', 'auctions']],
    ['q5', (events: ReturnType<typeof allEvents>) => referenceQ5(events), ['windowStart', 'windowEnd', 'auction', 'count']],
  ] as const)('%s on two worker threads writes the batch computation\'s results (--output)', async (query, reference, fields) => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-nexmark-'));
    dirs.push(dir);
    const options = { events: 150_000, rate: 10_000, seed: 11 };
    const run = await runSluice(['run', JOB, '--query', query, '--events', '150000', '--rate', '10000', '--seed', '11', '--parallelism', '2', '--output', dir]);
    expect(run.code, run.stderr).toBe(0);
    let results = readResults(dir) as Record<string, number>[];
    if (query === 'q4') {
      // The last update of each category is its result.
      const latest = new Map<number, Record<string, number>>();
      for (const r of results) if ((latest.get(r['category']!)?.['auctions'] ?? 0) < r['auctions']!) latest.set(r['category']!, r);
      results = [...latest.values()];
    }
    expect(canonical(results, fields)).toEqual(canonical(reference(allEvents(options)), fields));
  });
});
