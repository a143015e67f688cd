// The failover split and the state dir write meter of dev:cluster (scripts/cluster/failover-times.ts,
// dir-write-meter.ts) and the figures' median (scripts/cluster/figures.ts).
import { appendFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DirWriteMeter } from '../../../scripts/cluster/dir-write-meter.ts';
import { failoverTimes } from '../../../scripts/cluster/failover-times.ts';
import { median } from '../../../scripts/cluster/figures.ts';
import type { Logged } from '../../../scripts/cluster/local-cluster.ts';

const w = (id: string, at: number, event: Record<string, unknown>): Logged => ({ at, source: `worker:${id}`, event });

describe('failoverTimes', () => {
  const log: Logged[] = [
    w('w1', 100, { event: 'slot-started', slot: 0, epoch: 1, restore: 'fresh' }),
    w('w1', 900, { event: 'lease-acquired', slot: 1, epoch: 9 }), // before the kill: not the failover
    w('w2', 4000, { event: 'lease-acquired', slot: 0, epoch: 2 }),
    w('w2', 4100, { event: 'slot-started', slot: 0, epoch: 1, restore: 'local' }), // another epoch's start
    w('w2', 4600, { event: 'slot-started', slot: 0, epoch: 2, restore: 's3', ms: 450 }),
    w('w3', 4200, { event: 'lease-acquired', slot: 1, epoch: 10 }),
    w('w3', 4500, { event: 'slot-started', slot: 1, epoch: 10, restore: 'local', ms: 250 }),
  ];

  it('splits at the take: detection is the latest take, restore the longest take -> start at the same epoch', () => {
    expect(failoverTimes(log, 'w1', [0, 1], 1000)).toEqual({ detectMs: 3200, restoreMs: 600, restoreReportedMs: 450, restore: 'local+s3' });
  });

  it('is undefined while a slot has not started elsewhere, and for a victim without slots', () => {
    expect(failoverTimes(log.slice(0, 4), 'w1', [0], 1000)).toBeUndefined();
    expect(failoverTimes(log, 'w1', [], 1000)).toBeUndefined();
  });
});

describe('DirWriteMeter', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('counts new and grown files once, keeps a renamed folder\'s files, and a truncated file\'s earlier bytes', async () => {
    dir = mkdtempSync(join(tmpdir(), 'dir-write-meter-'));
    const meter = new DirWriteMeter(() => [dir!], 60_000);
    mkdirSync(join(dir, 'e1'));
    writeFileSync(join(dir, 'e1', '000001.sst'), Buffer.alloc(1000));
    writeFileSync(join(dir, 'e1', 'LOG'), Buffer.alloc(100));
    expect(await meter.bytesWritten()).toBe(1100);
    appendFileSync(join(dir, 'e1', 'LOG'), Buffer.alloc(50));
    expect(await meter.bytesWritten()).toBe(1150);
    renameSync(join(dir, 'e1'), join(dir, 'e2')); // an epoch folder's rename writes nothing
    expect(await meter.bytesWritten()).toBe(1150);
    truncateSync(join(dir, 'e2', 'LOG'), 0);
    appendFileSync(join(dir, 'e2', 'LOG'), Buffer.alloc(10));
    expect(await meter.bytesWritten()).toBe(1160);
    await meter.stop();
  });
});

describe('median', () => {
  it('of odd and even counts, ignoring missing values', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, undefined, 3, 2])).toBe(2.5);
    expect(median([undefined])).toBeUndefined();
  });
});
