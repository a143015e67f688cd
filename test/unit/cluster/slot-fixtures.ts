import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamEnvironment } from '../../../lib/index.ts';
import { keyGroupOf, subtaskForKeyGroup } from '../../../lib/core/index.ts';
import type { ClusterConfigItem } from '../../../lib/cluster/control-items.ts';
import type { AckItem } from '../../../lib/cluster/control-items.ts';
import { CHECKPOINT_FORMAT_VERSION, type CheckpointMetadata } from '../../../lib/checkpoint/types.ts';
import { checkpointDirName } from '../../../lib/checkpoint/naming.ts';
import type { PollResult, Source, SourceReader, SourceSplit } from '../../../lib/connectors/source.ts';
import type { TwoPhaseCommitSink } from '../../../lib/connectors/sink.ts';
import { buildPhysicalPlan, type PhysicalPlan } from '../../../lib/graph/physical-plan.ts';
import { operatorStateRecords } from '../../../lib/graph/operator-records.ts';
import { encodeMetadata } from '../../../lib/storage/metadata-codec.ts';
import type { FsObjectStore } from '../../../lib/storage/fs/fs-object-store.ts';

export const P = 2;
export const MAX_P = 128;

export interface Row {
  readonly k: string;
  readonly v: number;
}

interface FeedSplit extends SourceSplit {
  readonly slot: number;
  readonly next: number;
}

/** What the test sees of the source: records to read per slot, and the completions its readers were told. */
export class Feeds {
  readonly rows: Row[][] = Array.from({ length: P }, () => []);
  readonly completions: number[][] = Array.from({ length: P }, () => []);
  /** Highest position read per slot. */
  readonly read: number[] = Array.from({ length: P }, () => 0);
  /** The key-group range each slot's reader was given (SourceReaderContext.alignedKeyGroups). */
  readonly alignedRanges: unknown[] = Array.from({ length: P }, () => undefined);
  /** The reader of this slot fails once at its next poll (a task failure). */
  failOnce: number | undefined;
}

/** An unbounded source: split s reads `feeds.rows[s]` from its checkpointed position, 'wait' at the end. */
export function feedSource(feeds: Feeds): Source<Row, FeedSplit> {
  return {
    name: 'feed',
    bounded: false,
    supportsKeyGroupAlignment: true,
    createSplits: (ctx) => Array.from({ length: ctx.parallelism }, (_, slot) => ({ id: `feed-${slot}`, slot, next: 0 })),
    createReader(splits, ctx): SourceReader<Row, FeedSplit> {
      feeds.alignedRanges[ctx.subtask] = ctx.alignedKeyGroups;
      const positions = splits.map((s) => ({ ...s }));
      return {
        poll(maxRecords): PollResult<Row> {
          for (const p of positions) {
            if (feeds.failOnce === p.slot) {
              feeds.failOnce = undefined;
              throw new Error(`injected failure of slot ${p.slot}`);
            }
            const rows = feeds.rows[p.slot]!;
            if (p.next < rows.length) {
              const values = rows.slice(p.next, p.next + maxRecords);
              const offsets = values.map((_, i) => p.next + i);
              (p as { next: number }).next += values.length;
              feeds.read[p.slot] = p.next;
              return { kind: 'batch', batch: { values, timestamps: values.map(() => 0), offsets, split: p.id } };
            }
          }
          return { kind: 'wait', retryAfterMs: 2 };
        },
        currentSplits: () => positions.map((p) => ({ ...p })),
        notifyCheckpointComplete(id) {
          for (const p of positions) feeds.completions[p.slot]!.push(id);
        },
        close() {},
      };
    },
  };
}

/** A two-phase-commit sink whose committables are the rows of each transaction; the coordinator would commit them. */
export function coordinatorSink(): TwoPhaseCommitSink<Row, { rows: Row[] }> {
  return {
    name: 'table',
    twoPhaseCommit: true,
    externalCommit: { kind: 'test', table: 'out' },
    createWriter() {
      let open: Row[] = [];
      return {
        write(batch) {
          open.push(...batch.values);
        },
        prepareCommit() {
          const rows = open;
          open = [];
          return rows.length > 0 ? [{ rows }] : [];
        },
      };
    },
    createCommitter: () => ({
      commit(committables) {
        throw new Error(`the runtime committed ${committables.length} committables in coordinator mode`);
      },
    }),
    cleanUpDangling() {},
  };
}

/** feed -> keyBy(k) -> rolling sum -> sink; the keyBy edge is aligned (each slot reads only its own keys). */
export function buildJob(feeds: Feeds, sink: TwoPhaseCommitSink<Row, unknown> = coordinatorSink()): { plan: PhysicalPlan; env: StreamEnvironment } {
  const env = new StreamEnvironment({ parallelism: P, maxParallelism: MAX_P });
  env
    .fromSource(feedSource(feeds))
    .keyBy((r) => r.k)
    .reduce((a, b) => ({ k: a.k, v: a.v + b.v }))
    .sinkTo(sink);
  return { plan: buildPhysicalPlan(env.graph, env.options), env };
}

export function clusterConfig(plan: PhysicalPlan, checkpointDir: string): ClusterConfigItem {
  return {
    fingerprint: plan.fingerprint,
    parallelism: P,
    maxParallelism: MAX_P,
    edges: plan.edges.map((e) => ({
      id: String(e.id),
      fromVertex: e.fromVertex,
      toVertex: e.toVertex,
      mode: e.partitioner.kind === 'forward' ? ('local' as const) : ('aligned' as const),
    })),
    checkpointDir,
    checkpointing: {},
    tasks: plan.vertices.flatMap((v) => Array.from({ length: P }, (_, s) => ({ vertex: v.id, subtask: s }))),
    sourceTasks: plan.vertices.filter((v) => v.source !== undefined).flatMap((v) => Array.from({ length: P }, (_, s) => ({ vertex: v.id, subtask: s }))),
    sinks: [],
    createdAt: 0,
  };
}

/** Keys that an aligned slot owns: `count` keys whose key group falls in slot `slot`'s range. */
export function keysOfSlot(slot: number, count: number): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) {
    const key = `key-${i}`;
    if (subtaskForKeyGroup(keyGroupOf(key, MAX_P), P, MAX_P) === slot) keys.push(key);
  }
  return keys;
}

/** What the coordinator does once every slot acked: the metadata of the checkpoint from the ack items' handles. */
export async function commitMetadata(store: FsObjectStore, plan: PhysicalPlan, checkpointId: number, acks: readonly AckItem[]): Promise<string> {
  const metadata: CheckpointMetadata = {
    version: CHECKPOINT_FORMAT_VERSION,
    checkpointId,
    savepoint: false,
    triggeredAt: 0,
    completedAt: 0,
    maxParallelism: MAX_P,
    parallelism: Object.fromEntries(plan.vertices.map((v) => [v.id, v.parallelism])),
    tasks: acks.flatMap((a) => (a.kind === 'ack' ? a.handles : [])),
    operators: operatorStateRecords(plan),
  };
  const path = `${checkpointDirName(checkpointId)}/_metadata`;
  await store.put(path, encodeMetadata(metadata));
  return path;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Polls `condition` every few ms, up to a generous bound (the machine is slow and shared). */
export async function until(condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
