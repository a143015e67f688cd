import { describe, it, expect } from 'vitest';
import type { TaskId, TaskStateHandle } from '../../../../lib/checkpoint/types.ts';
import type { CheckpointStorage } from '../../../../lib/storage/checkpoint-storage.ts';
import { decodeTaskSnapshot } from '../../../../lib/storage/task-state-codec.ts';
import type { TaskSnapshot } from '../../../../lib/storage/task-snapshot.ts';
import { CheckpointHub, type CoordinatorLink } from '../../../../lib/runtime/checkpoint-driver/checkpoint-hub.ts';
import { MemoryKeyedStateBackend } from '../../../../lib/state/memory/memory-backend.ts';
import { listState, type KeyedStateSnapshot } from '../../../../lib/state/index.ts';

/** Storage that keeps written task files in memory; `failWith` makes writes fail. */
function memoryStorage(failWith?: Error) {
  const files = new Map<string, Uint8Array>();
  const storage = {
    location: 'memory',
    async writeTaskState(checkpointId: number, name: string, data: Uint8Array) {
      if (failWith !== undefined) throw failWith;
      const path = `chk-${checkpointId}/${name}`;
      files.set(path, data.slice());
      return { path, bytes: data.byteLength, sha256: 'f'.repeat(64) };
    },
  } as unknown as CheckpointStorage;
  return { storage, files };
}

function recordingLink() {
  const acks: { checkpointId: number; handle: TaskStateHandle }[] = [];
  const declines: { checkpointId: number; task: TaskId; reason: string }[] = [];
  let settled: () => void = () => {};
  const done = new Promise<void>((resolve) => (settled = resolve));
  const link: CoordinatorLink = {
    ack: (checkpointId, handle) => {
      acks.push({ checkpointId, handle });
      settled();
    },
    decline: (checkpointId, task, reason) => {
      declines.push({ checkpointId, task, reason });
      settled();
    },
    sourceFinished: () => {},
  };
  return { link, acks, declines, done };
}

describe('CheckpointHub.acknowledge (asynchronous phase)', () => {
  it('returns before encoding: the task goes on processing while its copy is encoded and written', async () => {
    const { storage, files } = memoryStorage();
    const { link, acks, done } = recordingLink();
    const hub = new CheckpointHub(storage, link);
    const operators: TaskSnapshot['operators'] = [{ nodeId: 1, watermark: 5 }];
    hub.acknowledge('Window', 7, { vertex: 2, subtask: 1, operators }, 1.5);
    // Whatever runs in the same turn as the acknowledge call (the task's next records) comes before the encoding.
    operators.push({ nodeId: 9, watermark: 6 });
    expect(files.size).toBe(0);
    await done;
    const decoded = decodeTaskSnapshot(files.get('chk-7/task-2-1.state')!);
    expect(decoded.operators.map((o) => o.nodeId)).toEqual([1, 9]);
    expect(acks).toHaveLength(1);
    const handle = acks[0]!.handle;
    expect(handle).toMatchObject({ task: { vertex: 2, subtask: 1 }, vertexName: 'Window', path: 'chk-7/task-2-1.state', syncMs: 1.5 });
    expect(handle.bytes).toBe(files.get('chk-7/task-2-1.state')!.byteLength);
    expect(handle.asyncMs).toBeGreaterThanOrEqual(0);
  });

  it('writes the state as it was at the synchronous copy, though working state changes before the encoding', async () => {
    const { storage, files } = memoryStorage();
    const { link, done } = recordingLink();
    const hub = new CheckpointHub(storage, link);
    const backend = new MemoryKeyedStateBackend({ keyGroupRange: { start: 0, end: 127 }, maxParallelism: 128, now: () => 0 });
    const list = backend.getListState(listState<number>('seen'));
    backend.setCurrentKey('a');
    list.add(1);
    hub.acknowledge('Process', 1, { vertex: 0, subtask: 0, operators: [{ nodeId: 3, watermark: 0, keyed: backend.snapshot() }] }, 0.1);
    list.add(2);
    backend.setCurrentKey('b');
    list.add(3);
    await done;
    const keyed = decodeTaskSnapshot(files.get("chk-1/task-0-0.state")!).operators[0]!.keyed as KeyedStateSnapshot;
    const entries = keyed.keyGroups.flatMap((g) => g.states['seen'] ?? []);
    expect(entries.map(([key, , value]) => [key, value])).toEqual([['a', [1]]]);
  });

  it('declines the checkpoint when the write fails, without throwing into the task', async () => {
    const { storage } = memoryStorage(new Error('disk full'));
    const { link, acks, declines, done } = recordingLink();
    const hub = new CheckpointHub(storage, link);
    expect(() => hub.acknowledge('Sink', 3, { vertex: 1, subtask: 0, operators: [] }, 0)).not.toThrow();
    await done;
    expect(acks).toHaveLength(0);
    expect(declines).toEqual([{ checkpointId: 3, task: { vertex: 1, subtask: 0 }, reason: 'disk full' }]);
  });
});
