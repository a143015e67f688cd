import { PutRecordsCommand, SplitShardCommand } from '@aws-sdk/client-kinesis';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/index.ts';
import {
  hashKeyRangeOfKeyGroups,
  keyGroupRangeForSubtask,
  kinesisHashKey,
  kinesisKeyGroupOf,
} from '../../lib/core/index.ts';
import type { SourceReaderContext } from '../../lib/connectors/source.ts';
import type { DeadLetter } from '../../lib/connectors/aws/dead-letter.ts';
import { kinesisSource, type KinesisSourceReader } from '../../lib/connectors/aws/kinesis/index.ts';
import { listShards, mergeShards, putRecords } from '../harness/aws/kinesis-emulator.ts';
import { numberedEvents, useKinesisEmulator, type NumberedEvent } from '../harness/aws/kinesis-test-setup.ts';

/**
 * The Kinesis source reading a cluster slot's kinesis-hash key groups (alignedKeyGroups): each "slot" is a reader
 * with its own key-group range over maxParallelism 128, reading every shard that overlaps it as a sub-split.
 */

type Event = NumberedEvent;
const M = 128;
const kinesis = useKinesisEmulator();
const shard = (n: number) => `shardId-${String(n).padStart(12, '0')}`;

function slotContext(slot: number, slots: number): SourceReaderContext {
  const range = keyGroupRangeForSubtask(slot, slots, M);
  return {
    subtask: slot,
    parallelism: slots,
    clock: systemClock,
    signal: new AbortController().signal,
    fencing: { attempt: 0, epoch: 1 },
    checkpointing: true,
    alignedKeyGroups: { start: range.start, end: range.end, maxParallelism: M },
  };
}

/** What a slot's reader returned, in order: values with their split, and when each split finished. */
interface SlotLog {
  values: { split: string; e: Event }[];
  /** Split id -> position in `steps` of its first batch with records / of its end. */
  firstRecordAt: Map<string, number>;
  finishedAt: Map<string, number>;
  steps: number;
}
const newLog = (): SlotLog => ({ values: [], firstRecordAt: new Map(), finishedAt: new Map(), steps: 0 });

/** Polls every reader in turn until `done` holds; fails after a generous bound. */
async function pollAll(readers: KinesisSourceReader<Event>[], logs: SlotLog[], done: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (read ${logs.map((l) => l.values.length).join('+')})`);
    let waited = true;
    for (let i = 0; i < readers.length; i++) {
      const r = await readers[i]!.poll(200);
      const log = logs[i]!;
      if (r.kind === 'batch') {
        waited = false;
        log.steps++;
        if (r.batch.values.length > 0 && !log.firstRecordAt.has(r.batch.split)) log.firstRecordAt.set(r.batch.split, log.steps);
        for (const e of r.batch.values) log.values.push({ split: r.batch.split, e });
        for (const f of r.finishedSplits ?? []) log.finishedAt.set(f, log.steps);
      }
    }
    if (waited) await new Promise((res) => setTimeout(res, 20));
  }
}

const total = (logs: SlotLog[]) => logs.reduce((n, l) => n + l.values.length, 0);

/** Each slot got only its key groups; together, every record exactly once and in order per key. */
function expectExactlyOnceAligned(logs: SlotLog[], slots: number, expected: Map<string, number>): void {
  const byKey = new Map<string, number[]>();
  logs.forEach((log, slot) => {
    const range = keyGroupRangeForSubtask(slot, slots, M);
    for (const { e } of log.values) {
      const kg = kinesisKeyGroupOf(e.k, M);
      expect(kg >= range.start && kg <= range.end, `key ${e.k} (key group ${kg}) read by slot ${slot} [${range.start}, ${range.end}]`).toBe(true);
      byKey.set(e.k, [...(byKey.get(e.k) ?? []), e.n]);
    }
  });
  expect([...byKey.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [k, count] of expected) expect(byKey.get(k), `records of ${k}`).toEqual(Array.from({ length: count }, (_, i) => i));
}

function source(stream: string, deadLetters?: DeadLetter[]) {
  return kinesisSource<Event>({
    stream,
    clientConfig: kinesis.emu.clientConfig,
    startPosition: 'TRIM_HORIZON',
    shardDiscoveryIntervalMs: 100,
    ...(deadLetters === undefined ? {} : { deadLetters: { write: async (l: readonly DeadLetter[]) => void deadLetters.push(...l) } }),
  });
}

describe('kinesis-hash key groups and kinesalite', () => {
  it.each([4, 3])('agree with the shard kinesalite puts each record in (%i shards)', async (shards) => {
    const stream = await kinesis.newStream('placement', shards);
    const keys = Array.from({ length: 400 }, (_, i) => `user-${i * 7919}-é`);
    const placed = await putRecords(kinesis.client, stream, keys.map((key) => ({ key, data: {} })));
    const ranges = (await listShards(kinesis.client, stream)).map((s) => ({
      id: s.ShardId as string,
      first: BigInt(s.HashKeyRange!.StartingHashKey as string),
      last: BigInt(s.HashKeyRange!.EndingHashKey as string),
    }));
    keys.forEach((key, i) => {
      const h = kinesisHashKey(key);
      const byHash = ranges.find((r) => h >= r.first && h <= r.last)?.id;
      expect(byHash, key).toBe(placed[i]!.shardId);
      // The key group's own hash range lies in the hash space the same way.
      const kg = kinesisKeyGroupOf(key, M);
      const range = hashKeyRangeOfKeyGroups({ start: kg, end: kg }, M);
      expect(h >= range.first && h <= range.last).toBe(true);
    });
  });
});

describe('aligned Kinesis source reading', () => {
  it.each([2, 3])('gives each of %i slots exactly its key groups from 4 shards, every record once', async (slots) => {
    const stream = await kinesis.newStream(`aligned-${slots}`, 4);
    const next = new Map<string, number>();
    await putRecords(kinesis.client, stream, numberedEvents(1200, 97, 'acct-', next));
    const src = source(stream);
    expect(src.supportsKeyGroupAlignment).toBe(true);
    // Slot 0 starts from the source's whole-shard splits (cut to its key groups), the others from nothing (they list).
    const whole = await src.createSplits({ parallelism: slots });
    const readers = Array.from({ length: slots }, (_, s) => src.createReader(s === 0 ? whole : [], slotContext(s, slots)));
    const logs = readers.map(newLog);
    try {
      await pollAll(readers, logs, () => total(logs) >= 1200, 'all records');
      // A little longer (nothing more may come), until every sub-split has been found at the tip: idleness is per
      // sub-split, as per shard.
      const until = Date.now() + 500;
      const caughtUp = () => readers.every((r) => r.currentSplits().every((sp) => r.caughtUp!(sp.id)));
      await pollAll(readers, logs, () => Date.now() > until && caughtUp(), 'quiet and caught up');
      expectExactlyOnceAligned(logs, slots, next);
      readers.forEach((reader, s) => {
        const range = keyGroupRangeForSubtask(s, slots, M);
        const splits = reader.currentSplits();
        // One sub-split per shard overlapping the slot's hash range, each cut to the slot's key groups.
        const slotHash = hashKeyRangeOfKeyGroups(range, M);
        const overlapping = [0, 1, 2, 3].filter((n) => {
          const first = (BigInt(n) << 126n);
          const last = (BigInt(n + 1) << 126n) - 1n;
          return first <= slotHash.last && last >= slotHash.first;
        });
        expect(splits.map((sp) => sp.shardId).sort()).toEqual(overlapping.map(shard));
        for (const sp of splits) {
          expect(sp.id).toBe(`${sp.shardId}@kg${sp.keyGroups!.start}-${sp.keyGroups!.end}`);
          expect(sp.keyGroups!.start).toBeGreaterThanOrEqual(range.start);
          expect(sp.keyGroups!.end).toBeLessThanOrEqual(range.end);
          expect(sp.position.type).toBe('AFTER_SEQUENCE_NUMBER');
        }
        // 2 slots split the hash space where shards 1 and 2 meet: each shard is one slot's whole. 3 slots cut shards.
        if (slots === 2) expect(reader.counters.recordsOfOtherSlots).toBe(0);
        else expect(reader.counters.recordsOfOtherSlots).toBeGreaterThan(0);
      });
    } finally {
      await Promise.all(readers.map((r) => r.close()));
    }
  });

  it('restores sub-split positions from a checkpoint: the restored slot reads only what came after', async () => {
    const stream = await kinesis.newStream('aligned-restore', 4);
    const next = new Map<string, number>();
    const first = numberedEvents(600, 41, 'acct-', next);
    await putRecords(kinesis.client, stream, first);
    const src = source(stream);
    const readers = [0, 1, 2].map((s) => src.createReader([], slotContext(s, 3)));
    const logs = readers.map(newLog);
    await pollAll(readers, logs, () => total(logs) >= 600, 'the first records');
    const checkpoint = readers.map((r) => r.currentSplits(1));
    await Promise.all(readers.map((r) => r.close()));

    const second = numberedEvents(600, 41, 'acct-', next);
    await putRecords(kinesis.client, stream, second);
    const restored = checkpoint.map((splits, s) => src.createReader(structuredClone(splits), slotContext(s, 3)));
    const after = restored.map(newLog);
    try {
      await pollAll(restored, after, () => total(after) >= 600, 'the records after the checkpoint');
      const until = Date.now() + 500;
      await pollAll(restored, after, () => Date.now() > until, 'quiet');
      // Both runs together: every record exactly once, in order per key, each in its own slot.
      const joined = logs.map((l, s) => ({ ...l, values: [...l.values, ...after[s]!.values] }));
      expectExactlyOnceAligned(joined, 3, next);
      expect(total(after)).toBe(600);
    } finally {
      await Promise.all(restored.map((r) => r.close()));
    }
  });

  it('restores the sub-splits of 2 slots into 3 slots (another parallelism): every record once, each slot its own', async () => {
    const stream = await kinesis.newStream('aligned-rescale', 4);
    const next = new Map<string, number>();
    await putRecords(kinesis.client, stream, numberedEvents(500, 53, 'acct-', next));
    const src = source(stream);
    const before = [0, 1].map((s) => src.createReader([], slotContext(s, 2)));
    const logs = before.map(newLog);
    await pollAll(before, logs, () => total(logs) >= 500, 'the first records');
    // Unread records at the checkpoint: the new slots must pick them up from the old positions.
    const old = before.flatMap((r) => r.currentSplits(3));
    await Promise.all(before.map((r) => r.close()));
    await putRecords(kinesis.client, stream, numberedEvents(700, 53, 'acct-', next));
    // Every new slot is given every old sub-split; each keeps the parts of its own key groups.
    const after = [0, 1, 2].map((s) => src.createReader(structuredClone(old), slotContext(s, 3)));
    const afterLogs = after.map(newLog);
    try {
      await pollAll(after, afterLogs, () => total(afterLogs) >= 700, 'the records after the checkpoint');
      const until = Date.now() + 500;
      await pollAll(after, afterLogs, () => Date.now() > until, 'quiet');
      expect(total(afterLogs)).toBe(700);
      const byKey = new Map<string, number[]>();
      for (const { e } of [...logs, ...afterLogs].flatMap((l) => l.values)) byKey.set(e.k, [...(byKey.get(e.k) ?? []), e.n]);
      for (const [k, count] of next) expect(byKey.get(k), k).toEqual(Array.from({ length: count }, (_, i) => i));
      afterLogs.forEach((log, s) => {
        const range = keyGroupRangeForSubtask(s, 3, M);
        for (const { e } of log.values) expect(kinesisKeyGroupOf(e.k, M)).toSatisfy((kg: number) => kg >= range.start && kg <= range.end);
      });
      // Slot 1 (43..85) holds two parts of shard 1 (from old slot 0: 43..63) and of shard 2 (old slot 1: 64..85).
      expect(after[1]!.currentSplits().map((sp) => sp.id).sort()).toEqual([`${shard(1)}@kg43-63`, `${shard(2)}@kg64-85`]);
    } finally {
      await Promise.all(after.map((r) => r.close()));
    }
  });

  it('follows SplitShard at a hash not aligned to slots and MergeShards mid-run: every record once, children after their parents', async () => {
    const slots = 3;
    const stream = await kinesis.newStream('aligned-reshard', 4);
    const next = new Map<string, number>();
    const src = source(stream);
    const readers = Array.from({ length: slots }, (_, s) => src.createReader([], slotContext(s, slots)));
    const logs = readers.map(newLog);
    let put = 0;
    const phase = async () => {
      const batch = numberedEvents(300, 60, 'acct-', next);
      put += batch.length;
      await putRecords(kinesis.client, stream, batch);
    };
    const readAll = (what: string) => pollAll(readers, logs, () => total(logs) >= put, what);
    try {
      await phase();
      await readAll('phase 1');
      // Shard 1 covers key groups 32..63; slots of 3 split at 43 and 86. Split it inside key group 40, off any
      // slot or key-group boundary: slot 0 and slot 1 each read a part of it, and slot 0 both of its children.
      const at = hashKeyRangeOfKeyGroups({ start: 40, end: 40 }, M).first + 12_345n;
      await phase();
      await kinesis.client.send(new SplitShardCommand({ StreamName: stream, ShardToSplit: shard(1), NewStartingHashKey: at.toString() }));
      await phase();
      await readAll('phase 3');
      // Merge shards 2 and 3 (key groups 64..127, across the slot boundary at 86).
      await phase();
      const merged = await mergeShards(kinesis.client, stream, shard(2), shard(3));
      await phase();
      await readAll('phase 5');
      // Slot 1 restarts from a checkpoint now, the others go on.
      const checkpoint = readers[1]!.currentSplits(7);
      await readers[1]!.close();
      readers[1] = src.createReader(structuredClone(checkpoint), slotContext(1, slots));
      await phase();
      await readAll('phase 6');
      const until = Date.now() + 800;
      await pollAll(readers, logs, () => Date.now() > until, 'quiet');

      expect(total(logs)).toBe(put);
      expectExactlyOnceAligned(logs, slots, next);

      const listing = await listShards(kinesis.client, stream);
      const children = listing.filter((s) => s.ParentShardId === shard(1)).map((s) => s.ShardId as string);
      expect(children).toHaveLength(2);
      const childHash = BigInt(listing.find((s) => s.ShardId === children[1])!.HashKeyRange!.StartingHashKey as string);
      expect(childHash).toBe(at);
      // In each slot, a child's first record comes after the slot's part of each parent ended.
      const parentsOf = new Map<string, string[]>(
        listing.filter((s) => s.ParentShardId !== undefined).map((s) => [s.ShardId as string, [s.ParentShardId, s.AdjacentParentShardId].filter((p): p is string => p !== undefined)]),
      );
      let checked = 0;
      logs.forEach((log, s) => {
        if (s === 1) return; // its log spans a restart: positions of steps are not comparable
        for (const [split, firstAt] of log.firstRecordAt) {
          const shardId = split.split('@')[0]!;
          for (const parent of parentsOf.get(shardId) ?? []) {
            const parentSplit = [...log.finishedAt.keys()].find((id) => id.startsWith(`${parent}@`));
            if (parentSplit === undefined) continue; // the slot has no part of this parent
            expect(log.finishedAt.get(parentSplit)!, `${split} after ${parentSplit} in slot ${s}`).toBeLessThanOrEqual(firstAt);
            checked++;
          }
        }
      });
      expect(checked).toBeGreaterThanOrEqual(3);
      // Slot 0 reads both children of shard 1; slot 1 reads one of them and the merged child.
      expect(readers[0]!.currentSplits().map((sp) => sp.shardId)).toEqual(expect.arrayContaining(children));
      expect(readers[1]!.currentSplits().map((sp) => sp.shardId)).toEqual(expect.arrayContaining([children[1], merged]));
      expect(readers[2]!.currentSplits().map((sp) => sp.shardId)).toContain(merged);
    } finally {
      await Promise.all(readers.map((r) => r.close()));
    }
  });

  it('sends a record put with a foreign ExplicitHashKey to the dead letters of exactly one slot', async () => {
    const stream = await kinesis.newStream('aligned-explicit', 4);
    const key = 'explicit-key';
    const own = kinesisHashKey(key) >> 126n; // the shard its MD5 falls in
    const other = (own + 2n) % 4n; // a shard it does not belong to
    const explicit = (other << 126n) + 777n;
    await kinesis.client.send(
      new PutRecordsCommand({
        StreamName: stream,
        Records: [
          { PartitionKey: key, ExplicitHashKey: explicit.toString(), Data: Buffer.from(JSON.stringify({ k: key, n: 0 })) },
          { PartitionKey: 'plain', Data: Buffer.from(JSON.stringify({ k: 'plain', n: 0 })) },
        ],
      }),
    );
    const letters: DeadLetter[] = [];
    const src = source(stream, letters);
    const readers = [0, 1].map((s) => src.createReader([], slotContext(s, 2)));
    const logs = readers.map(newLog);
    try {
      await pollAll(readers, logs, () => total(logs) >= 1 && letters.length >= 1, 'the plain record and the dead letter');
      const until = Date.now() + 800;
      await pollAll(readers, logs, () => Date.now() > until, 'quiet');
      expect(logs.flatMap((l) => l.values.map((v) => v.e.k))).toEqual(['plain']);
      expect(letters).toHaveLength(1);
      expect(letters[0]).toMatchObject({ partitionKey: key, shardId: shard(Number(other)) });
      expect(letters[0]!.reason).toMatch(/ExplicitHashKey/);
    } finally {
      await Promise.all(readers.map((r) => r.close()));
    }
  });
});

