import { describe, expect, it } from 'vitest';
import { collectSink, ConfigError, StreamEnvironment, TumblingEventTimeWindows } from '../../../lib/index.ts';
import { keyGroupOf, kinesisKeyGroupOf, subtaskForKeyGroup, type StreamElement } from '../../../lib/core/index.ts';
import { buildPhysicalPlan } from '../../../lib/graph/physical-plan.ts';
import { operatorStateRecords } from '../../../lib/graph/operator-records.ts';
import { RecordWriter } from '../../../lib/runtime/record-writer.ts';
import { LocalChannel } from '../../../lib/runtime/channels/local-channel.ts';
import { MemoryKeyedStateBackend } from '../../../lib/state/memory/memory-backend.ts';
import { HeapTimerService } from '../../../lib/state/timers/heap-timer-service.ts';

type Event = { k: string; v: number };

function keyedJob(keyGroups: 'murmur' | 'kinesis-hash' | undefined) {
  const env = new StreamEnvironment({ parallelism: 2 });
  env
    .fromCollection<Event>([{ k: 'a', v: 1 }])
    .keyBy((e) => e.k, keyGroups === undefined ? undefined : { keyGroups })
    .process({ processElement() {} })
    .sinkTo(collectSink());
  return buildPhysicalPlan(env.graph, env.options);
}

describe("keyBy(f, { keyGroups: 'kinesis-hash' })", () => {
  it('marks the hash edge, and changes the fingerprint only for kinesis-hash', () => {
    const plain = keyedJob(undefined);
    const murmur = keyedJob('murmur');
    const kinesis = keyedJob('kinesis-hash');
    const hashEdge = kinesis.edges.find((e) => e.partitioner.kind === 'hash');
    expect(hashEdge?.partitioner).toMatchObject({ kind: 'hash', keyGroupHash: 'kinesis-hash' });
    expect(murmur.fingerprint).toBe(plain.fingerprint);
    expect(kinesis.fingerprint).not.toBe(plain.fingerprint);
  });

  it('records the hash in the keyed operator\'s state meaning (murmur adds nothing)', () => {
    const meaning = (p: ReturnType<typeof keyedJob>) => operatorStateRecords(p).find((r) => r.name === 'KeyedProcess')?.meaning;
    expect(meaning(keyedJob('kinesis-hash'))).toMatchObject({ keyGroups: 'kinesis-hash' });
    expect(meaning(keyedJob('murmur'))).not.toHaveProperty('keyGroups');
  });

  it('refuses an unknown hash and two keyed inputs with different hashes', () => {
    const env = new StreamEnvironment({ parallelism: 2 });
    const s = env.fromCollection<Event>([]);
    expect(() => s.keyBy((e) => e.k, { keyGroups: 'md5' as 'kinesis-hash' })).toThrow(ConfigError);
    s.keyBy((e) => e.k, { keyGroups: 'kinesis-hash' })
      .connect(s.keyBy((e) => e.k))
      .process({ processElement1() {}, processElement2() {} })
      .sinkTo(collectSink());
    expect(() => buildPhysicalPlan(env.graph, env.options)).toThrow(/different key-group hashes \(kinesis-hash and murmur\)/);
  });

  it('connected streams keyed with the option use it on both inputs', () => {
    const env = new StreamEnvironment({ parallelism: 2 });
    const s = env.fromCollection<Event>([]);
    s.connect(s).keyBy((e) => e.k, (e) => e.k, { keyGroups: 'kinesis-hash' }).process({ processElement1() {}, processElement2() {} }).sinkTo(collectSink());
    const p = buildPhysicalPlan(env.graph, env.options);
    const hashes = p.edges.filter((e) => e.partitioner.kind === 'hash').map((e) => (e.partitioner as { keyGroupHash?: string }).keyGroupHash);
    expect(hashes).toEqual(['kinesis-hash', 'kinesis-hash']);
  });

  it('window joins pass the option to both inputs (interval and regular joins take keyed streams as they are)', () => {
    const env = new StreamEnvironment({ parallelism: 2 });
    const s = env.fromCollection<Event>([]);
    s.join(s)
      .where((e) => e.k, { keyGroups: 'kinesis-hash' })
      .equalTo((e) => e.k)
      .window(TumblingEventTimeWindows.of(1000))
      .apply((a, b) => a.v + b.v)
      .sinkTo(collectSink());
    const p = buildPhysicalPlan(env.graph, env.options);
    const hashes = p.edges.filter((e) => e.partitioner.kind === 'hash').map((e) => (e.partitioner as { keyGroupHash?: string }).keyGroupHash);
    expect(hashes).toEqual(['kinesis-hash', 'kinesis-hash']);
  });

  it('routes records by the MD5 key group', () => {
    const chans = [new LocalChannel(100), new LocalChannel(100), new LocalChannel(100)];
    const w = new RecordWriter({ kind: 'hash', keySelector: (v) => v as string, keyGroupHash: 'kinesis-hash' }, chans, 128, { name: 'p', subtask: 0 });
    const keys = Array.from({ length: 200 }, (_, i) => `key-${i}`);
    w.emit({ values: keys, timestamps: keys.map(() => 0), split: 's' });
    let moved = 0;
    chans.forEach((ch, t) => {
      for (let e: StreamElement<unknown> | undefined = ch.poll(); e !== undefined; e = ch.poll()) {
        if (e.kind !== 'batch') continue;
        for (const v of e.batch.values) {
          expect(subtaskForKeyGroup(kinesisKeyGroupOf(v as string, 128), 3, 128)).toBe(t);
          if (subtaskForKeyGroup(keyGroupOf(v as string, 128), 3, 128) !== t) moved++;
        }
      }
    });
    expect(moved).toBeGreaterThan(0); // the two hashes really differ
  });

  it('keyed state and heap timers place keys by the given function', () => {
    // A key whose two hashes give different key groups, so the murmur backend below must refuse it.
    const key = Array.from({ length: 100 }, (_, i) => `key-${i}`).find((k) => keyGroupOf(k, 128) !== kinesisKeyGroupOf(k, 128)) as string;
    const kg = kinesisKeyGroupOf(key, 128);
    const backend = new MemoryKeyedStateBackend({ keyGroupRange: { start: kg, end: kg }, maxParallelism: 128, now: () => 0, keyGroupOf: kinesisKeyGroupOf });
    backend.setCurrentKey(key);
    expect(backend.getCurrentKeyGroup()).toBe(kg);
    const murmur = new MemoryKeyedStateBackend({ keyGroupRange: { start: kg, end: kg }, maxParallelism: 128, now: () => 0 });
    expect(() => murmur.setCurrentKey(key)).toThrow(/outside this subtask's range/);
    const timers = new HeapTimerService({ maxParallelism: 128, keyGroupOf: kinesisKeyGroupOf });
    timers.registerEventTimeTimer(key, 'ns', 10);
    expect(timers.snapshot().map((g) => g.keyGroup)).toEqual([kg]);
  });
});
