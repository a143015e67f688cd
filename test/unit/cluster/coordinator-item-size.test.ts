import { describe, expect, it } from 'vitest';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { CheckpointCoordinator } from '../../../lib/checkpoint/coordinator.ts';
import type { TaskStateHandle } from '../../../lib/checkpoint/types.ts';
import type { CoordinatorItem, SlotCommittablesRef } from '../../../lib/cluster/control-items.ts';
import { CoordinatorControlTable } from '../../../lib/connectors/aws/cluster/coordinator-control-table.ts';

/** DynamoDB's item size: attribute names and values in UTF-8, numbers about 1 byte per 2 digits, 3 bytes per map or list. */
function valueSize(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S, 'utf8');
  if (v.N !== undefined) return Math.ceil(v.N.length / 2) + 1;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.B !== undefined) return v.B.byteLength;
  if (v.L !== undefined) return 3 + v.L.reduce((n, e) => n + 1 + valueSize(e), 0);
  if (v.M !== undefined) return 3 + mapSize(v.M);
  throw new Error(`unexpected attribute ${JSON.stringify(v)}`);
}

function mapSize(m: Record<string, AttributeValue>): number {
  return Object.entries(m).reduce((n, [k, v]) => n + Buffer.byteLength(k, 'utf8') + valueSize(v), 0);
}

const hex = (seed: number): string => Array.from({ length: 8 }, (_, i) => ((seed * 2654435761 + i * 40503) >>> 0).toString(16).padStart(8, '0')).join('');

/** A RocksDB task handle with an incremental chain of `files` shared files, as the worker acks them. */
function handle(vertex: number, subtask: number, checkpointId: number, files: number): TaskStateHandle {
  const id = vertex * 1000 + subtask;
  return {
    task: { vertex, subtask },
    vertexName: `window-aggregate-${vertex}`,
    path: `chk-${String(checkpointId).padStart(10, '0')}/task-${vertex}-${subtask}.state`,
    bytes: 123_456,
    sha256: hex(id),
    syncMs: 12,
    asyncMs: 345,
    sharedFiles: Array.from({ length: files }, (_, f) => ({
      path: `shared/${vertex}-${subtask}-${String(checkpointId - files + f).padStart(10, '0')}-changes-${hex(id * 100 + f).slice(0, 32)}.sst`,
      bytes: 4_567_890,
      sha256: hex(id * 100 + f + 7),
    })),
  };
}

describe('the coordinator item', () => {
  it('stays well under DynamoDB 400 KB for P = 32, 4 keyed vertices and 20-file incremental chains', () => {
    const P = 32;
    const FILES = 20;
    const tasks = [0, 1, 2, 3].flatMap((vertex) => Array.from({ length: P }, (_, subtask) => ({ vertex, subtask })));
    let c = CheckpointCoordinator.start({ intervalMs: 1000, timeoutMs: 600_000, retain: 2 }, {
      tasks,
      maxParallelism: 4096,
      now: 0,
      lastCheckpointId: 99,
      retainedCheckpointIds: [98, 99],
      sourceTasks: tasks.filter((t) => t.vertex === 0),
    });
    c = c.tick(1000).coordinator;
    const id = c.inFlight?.checkpointId ?? -1;
    expect(id).toBe(100);
    // Every task acknowledged: the largest the state gets (phase committing, every handle held once).
    for (const t of tasks) c = c.ack(id, handle(t.vertex, t.subtask, id, FILES), 1001).coordinator;
    expect(c.inFlight?.acknowledged.length).toBe(tasks.length);
    const ref = (slot: number): SlotCommittablesRef => ({ path: `chk-${String(id).padStart(10, '0')}/committables-${slot}-e3.bin`, bytes: 2048, sha256: hex(slot) });
    const bySlot = Object.fromEntries(Array.from({ length: P }, (_, s) => [String(s), ref(s)]));
    const item: CoordinatorItem = {
      version: 12345,
      execution: 'arn:aws:states:eu-west-1:123456789012:execution:sluice-supervisor-totals:5f1c1d7e-1111-2222-3333-444455556666',
      state: c.state,
      pendingCommit: { checkpointId: id, leaseGeneration: 17, staged: { path: `chk-${String(id).padStart(10, '0')}/_metadata.pending`, bytes: 400_000, sha256: hex(1) } },
      inFlightCommittables: { checkpointId: id, bySlot },
      sinkCommits: [{ checkpointId: id - 1, refs: Array.from({ length: P }, (_, s) => ref(s)) }],
      requests: Object.fromEntries(Array.from({ length: 20 }, (_, r) => [`savepoint-${r}`, r + 1])),
    };
    const sizeOf = (i: CoordinatorItem): number => mapSize(marshall(i, { removeUndefinedValues: true, convertClassInstanceToMap: false }));
    const whole = sizeOf(item);
    const stored = sizeOf(CoordinatorControlTable.compact(item));
    if (process.env['TRACE_COORDINATOR'] === '1') console.log(JSON.stringify({ whole, stored, handles: tasks.length, files: FILES }));
    // With the handles' chains inline the item alone passes the limit (and the metadata bytes inline doubled that).
    expect(whole).toBeGreaterThan(400_000);
    expect(stored).toBeLessThan(100_000);
  });
});
