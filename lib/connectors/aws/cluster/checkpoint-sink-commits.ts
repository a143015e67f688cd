import { createHash } from 'node:crypto';
import type { ClusterSinkConfig, SlotCommittablesRef } from '../../../cluster/control-items.ts';
import { decodeSlotCommittables, SlotCommittablesError } from '../../../cluster/slot-committables.ts';
import type { ExternalCommitter } from './sink-commit-registry.ts';

/** Reads a storage-relative object; undefined when it does not exist. */
export type ReadObject = (path: string) => Promise<Uint8Array | undefined>;

/**
 * Commits the sink committables of one checkpoint: reads each slot's committables object (size and sha256 as its
 * ack recorded them), then hands every sink its committables, slot by slot, through the committer of its
 * `externalCommit`. Committers are idempotent, so a repeat after a failure halfway changes nothing already done.
 * Returns how many committables were handed over.
 */
export async function commitCheckpointSinks(
  checkpointId: number,
  refs: readonly SlotCommittablesRef[],
  sinks: readonly ClusterSinkConfig[],
  committerOf: (sink: ClusterSinkConfig) => ExternalCommitter,
  read: ReadObject,
): Promise<number> {
  const bySink = new Map<number, unknown[]>();
  for (const ref of refs) {
    const bytes = await read(ref.path);
    if (bytes === undefined) throw new SlotCommittablesError(`the committables object ${ref.path} of checkpoint ${checkpointId} is missing`);
    const sha = createHash('sha256').update(bytes).digest('hex');
    if (bytes.byteLength !== ref.bytes || sha !== ref.sha256) {
      throw new SlotCommittablesError(`the committables object ${ref.path} of checkpoint ${checkpointId} differs from what its slot acknowledged (size or sha256)`);
    }
    const decoded = decodeSlotCommittables(bytes, ref.path);
    if (decoded.checkpointId !== checkpointId) {
      throw new SlotCommittablesError(`${ref.path} holds the committables of checkpoint ${decoded.checkpointId}, not ${checkpointId}`);
    }
    for (const sink of decoded.sinks) bySink.set(sink.nodeId, [...(bySink.get(sink.nodeId) ?? []), ...sink.committables]);
  }
  let handed = 0;
  for (const sink of sinks) {
    const committables = bySink.get(sink.nodeId) ?? [];
    if (committables.length === 0) continue;
    await committerOf(sink).commit(committables);
    handed += committables.length;
  }
  return handed;
}
