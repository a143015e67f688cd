// The coordinator dies at after-metadata-commit: CollectAcks' one transaction [commit record, control.completed] took
// effect, then the handler dies before it saved anything else or returned (the coordinator item still holds the
// pending commit). The state machine's Retry runs CollectAcks again, which must finish the same commit (the record
// is there with the same bytes: committed, never aborted), commit its sinks once, and go on; the table equals the
// plain loop's totals exactly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMIT_TABLE } from '../../test/harness/aws/example-stack.ts';
import { LocalCluster, generateTransactions, referenceTotals, type CoordinatorCall } from '../../scripts/cluster/local-cluster.ts';

let cluster: LocalCluster;
let armed = false;
const crashes: number[] = [];

/** The metadata commit: one TransactWriteItems whose first item puts the checkpoint's commit record. */
function isMetadataCommit(call: CoordinatorCall): boolean {
  if (call.command !== 'TransactWriteItemsCommand') return false;
  const items = call.input['TransactItems'] as { Put?: { TableName?: string } }[] | undefined;
  return items?.[0]?.Put?.TableName === COMMIT_TABLE;
}

beforeAll(async () => {
  cluster = await LocalCluster.start({
    parallelism: 2,
    shards: 2,
    leaseDurationMs: 3000,
    coordinatorFault: (call) => {
      if (!armed || !isMetadataCommit(call)) return false;
      armed = false;
      crashes.push(Date.now());
      return true;
    },
  });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

describe('local cluster, the coordinator dies right after a metadata commit (after-metadata-commit)', () => {
  it('the retried CollectAcks finishes that commit, its sinks are committed once and the table equals the reference', async () => {
    const batches = [1, 2, 3].map((seed) => generateTransactions(1500, 40, seed, Date.UTC(2026, 10, seed)));
    await cluster.feed(batches[0]!);
    const w1 = cluster.startWorker('w1');
    const w2 = cluster.startWorker('w2');
    await cluster.until('each worker to hold one slot', () => ['w1', 'w2'].every((id) => cluster.heldSlots(id).length === 1), 60_000);
    await cluster.untilTableEquals(referenceTotals(batches[0]!), 60_000);

    // Mid-stream: the checkpoint whose commit dies holds records of the second batch.
    await cluster.feed(batches[1]!);
    armed = true;
    await cluster.until('the injected crash after a metadata commit', () => crashes.length === 1, 60_000);
    const failed = cluster.coordinatorEvents('metadata-commit-failed');
    expect(failed).toHaveLength(1);
    const id = failed[0]!.event['checkpointId'] as number;
    expect(failed[0]!.event['error']).toContain('injected coordinator crash');
    await cluster.feed(batches[2]!);

    await cluster.until('a later checkpoint to complete', () => cluster.coordinatorEvents('checkpoint-completed').some((l) => (l.event['checkpointId'] as number) > id), 60_000);
    await cluster.untilTableEquals(referenceTotals(batches.flat()), 60_000);
    const completed = cluster.coordinatorEvents('checkpoint-completed').map((l) => l.event['checkpointId'] as number);
    // The retry found its own commit record: completed (once), not aborted, and its sinks committed once.
    expect(completed.filter((c) => c === id)).toHaveLength(1);
    expect(cluster.coordinatorEvents('checkpoint-aborted').filter((l) => l.event['checkpointId'] === id)).toEqual([]);
    expect(cluster.coordinatorEvents('sinks-committed').filter((l) => l.event['checkpointId'] === id)).toHaveLength(1);
    // Completions move forward only, each once.
    expect(completed).toEqual([...new Set(completed)].sort((a, b) => a - b));
    // The Task's Retry did it: no Catch -> Abort.
    expect(cluster.coordinatorStats.handlerCalls['AbortFunctionArn']).toBeUndefined();
    expect(cluster.coordinatorStats.supervisorExecutions).toHaveLength(1);
    expect(cluster.coordinatorEvents('runner-failed')).toEqual([]);
    expect(cluster.workerEvents('slot-failed')).toEqual([]);
    const exits = await cluster.stop();
    expect(exits).toEqual({ w1: { code: 0, signal: null }, w2: { code: 0, signal: null } });
    expect(w1.stderr.join('') + w2.stderr.join('')).toBe('');
  });
});
