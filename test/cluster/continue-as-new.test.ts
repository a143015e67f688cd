// The supervisor continues as new: with maxChildren 2 and 2-second cycles executions, every supervisor execution runs
// two cycles executions, then starts the next supervisor execution, whose Recover takes the coordinator item over.
// While the job runs at least 3 supervisor executions happen; checkpoint ids only grow across them, every completed
// checkpoint's sinks are committed once, `control.completed` is the newest one, and the table equals the reference.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorControlTable } from '../../lib/connectors/aws/cluster/coordinator-control-table.ts';
import { CONTROL_TABLE, LocalCluster, generateTransactions, referenceTotals } from '../../scripts/cluster/local-cluster.ts';

let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await LocalCluster.start({ parallelism: 2, shards: 2, leaseDurationMs: 3000, maxChildren: 2, cycleSeconds: 2 });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

const executions = (): number => cluster.coordinatorStats.supervisorExecutions.length;

describe('local cluster, the supervisor continues as new (maxChildren 2)', () => {
  it('checkpoints go on across >= 3 supervisor executions, none lost, and the table equals the reference', async () => {
    const batches = [1, 2, 3].map((seed) => generateTransactions(1500, 40, seed, Date.UTC(2026, 10, seed)));
    await cluster.feed(batches[0]!);
    const w1 = cluster.startWorker('w1');
    const w2 = cluster.startWorker('w2');
    await cluster.until('each worker to hold one slot', () => ['w1', 'w2'].every((id) => cluster.heldSlots(id).length === 1), 60_000);
    const first = executions();
    await cluster.feed(batches[1]!);
    await cluster.until('the next supervisor execution', () => executions() > first, 60_000);
    await cluster.feed(batches[2]!);
    await cluster.until('two more supervisor executions, at least 3 in all', () => executions() >= Math.max(3, first + 2), 60_000);
    await cluster.untilTableEquals(referenceTotals(batches.flat()), 60_000);

    // Checkpoints completed under more than one supervisor execution (the log line names its execution).
    const completed = cluster.coordinatorEvents('checkpoint-completed');
    const by = new Set(completed.map((l) => l.event['execution']));
    expect(by.size, cluster.describe()).toBeGreaterThanOrEqual(2);
    // Ids only grow, each completed once: no execution restarted the numbering or completed one again.
    const ids = completed.map((l) => l.event['checkpointId'] as number);
    expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b));
    const triggered = cluster.coordinatorEvents('triggered').map((l) => l.event['checkpointId'] as number);
    expect(triggered).toEqual([...new Set(triggered)].sort((a, b) => a - b));
    // No completed checkpoint lost: each one's sinks are committed (once), and control names the newest.
    await cluster.until(
      'the sinks of every completed checkpoint to be committed',
      () => {
        const committed = cluster.coordinatorEvents('sinks-committed').map((l) => l.event['checkpointId']);
        return cluster.coordinatorEvents('checkpoint-completed').every((l) => committed.includes(l.event['checkpointId']));
      },
      60_000,
    );
    const committed = cluster.coordinatorEvents('sinks-committed').map((l) => l.event['checkpointId'] as number);
    expect(committed).toEqual([...new Set(committed)].sort((a, b) => a - b));
    const completedIds = (): number[] => cluster.coordinatorEvents('checkpoint-completed').map((l) => l.event['checkpointId'] as number);
    const newest = Math.max(...completedIds());
    const control = await new CoordinatorControlTable(cluster.stack.dynamodb.client, CONTROL_TABLE, cluster.jobId).readControl();
    // The job goes on meanwhile: control names the newest completion seen or a later one, never an older one.
    expect(control.completed?.checkpointId).toBeGreaterThanOrEqual(newest);
    // Completions are logged just after their commit.
    await cluster.until('the completion control names to be logged', () => completedIds().includes(control.completed?.checkpointId ?? -1), 30_000);
    expect(control.sinkCommittedThrough).toBeGreaterThanOrEqual(newest);
    expect(cluster.coordinatorEvents('runner-failed')).toEqual([]);
    expect(cluster.workerEvents('slot-failed')).toEqual([]);
    const exits = await cluster.stop();
    expect(exits).toEqual({ w1: { code: 0, signal: null }, w2: { code: 0, signal: null } });
    expect(w1.stderr.join('') + w2.stderr.join('')).toBe('');
  });
});
