// Stop and resume from the AWS console, on a whole local cluster: the control state machine
// (functions/control/control.asl.json, run locally with its real handlers) stops the aligned job
// (examples/cluster-account-totals.ts, 2 `sluice worker` processes, P = 2) at a savepoint, input arrives while it is
// halted, `resume` restarts it: a new worker restores the stop savepoint and the table ends equal to a plain loop's
// totals over all the input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStepFunctions } from '../../functions/coordinator/local/local-step-functions.ts';
import { LocalControlStateMachine } from '../../functions/control/local/local-control.ts';
import { useControlSettings } from '../../functions/control/settings.ts';
import { CONTROL_TABLE, LocalCluster, generateTransactions, referenceTotals, tableDifferences, waitUntil, type Transaction } from '../../scripts/cluster/local-cluster.ts';

let cluster: LocalCluster;
const supervisors: { sfn: LocalStepFunctions; run: Promise<unknown> }[] = [];

beforeAll(async () => {
  cluster = await LocalCluster.start({ parallelism: 2, shards: 2, leaseDurationMs: 3000 });
  useControlSettings({ jobId: cluster.jobId, controlTable: CONTROL_TABLE, dynamo: cluster.stack.dynamodb.client, now: () => Date.now() });
}, 120_000);

afterAll(async () => {
  for (const s of supervisors) s.sfn.stop();
  await Promise.all(supervisors.map((s) => s.run));
  useControlSettings(undefined);
  await cluster?.stop();
}, 60_000);

async function tableEquals(transactions: readonly Transaction[], what: string): Promise<void> {
  const reference = referenceTotals(transactions);
  let last: string[] = [];
  await waitUntil(
    what,
    async () => {
      last = tableDifferences(reference, await cluster.table());
      return last.length === 0;
    },
    60_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; differences: ${last.slice(0, 5).join('; ')}\n${cluster.describe()}`);
  });
}

describe('local cluster: stop and resume through the control state machine', () => {
  it('stops at a savepoint, resumes from it with a new worker, and counts every record once', { timeout: 85_000 }, async () => {
    const control = await LocalControlStateMachine.load({
      startSupervisor: async () => {
        // As StartExecution would: a new supervisor execution, here in this process like the cluster's own.
        const sfn = await LocalStepFunctions.load({ waitMs: 100 });
        supervisors.push({ sfn, run: sfn.run().catch(() => undefined) });
      },
    });
    const first = generateTransactions(1000, 30, 1);
    await cluster.feed(first);
    const w1 = cluster.startWorker('w1');
    const w2 = cluster.startWorker('w2');
    await tableEquals(first, 'the table to equal the first input');

    const stop = await control.run({ command: 'stop' }, 'stop-1');
    expect(stop.status, JSON.stringify(stop)).toBe('SUCCEEDED');
    const stopped = (stop.status === 'SUCCEEDED' ? stop.output : {}) as { checkpointId: number; savepoint: string };
    // Halted: every worker stopped its slots, released the leases and exited 0.
    expect(await Promise.all([w1.exited, w2.exited])).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
    expect(await control.run({ command: 'status' })).toMatchObject({ status: 'SUCCEEDED', output: { state: 'halted' } });

    const second = generateTransactions(1000, 30, 2, Date.UTC(2026, 10, 2));
    await cluster.feed(second);
    const resume = await control.run({ command: 'resume' }, 'resume-1');
    expect(resume.status, JSON.stringify(resume)).toBe('SUCCEEDED');
    expect(resume.status === 'SUCCEEDED' && resume.output).toMatchObject({ restoredFrom: stopped.savepoint, checkpointId: stopped.checkpointId });

    // One new worker takes both slots (no handoff: each slot starts once, from the resume).
    cluster.startWorker('w3');
    await tableEquals([...first, ...second], 'the table to equal all the input');
    // Each slot restored the stop savepoint (not the last checkpoint before it, whose output the sinks had committed).
    const restarted = cluster.workerEvents('slot-started', 'w3');
    expect(restarted.map((l) => l.event['slot']).sort()).toEqual([0, 1]);
    for (const l of restarted) expect(l.event['checkpointId'], JSON.stringify(l.event)).toBe(stopped.checkpointId);
    expect(cluster.workerEvents('slot-failed')).toEqual([]);
    // The new coordinator goes on: a checkpoint after the savepoint completes.
    await waitUntil('a checkpoint after the savepoint', () => cluster.coordinatorEvents('checkpoint-completed').some((l) => (l.event['checkpointId'] as number) > stopped.checkpointId), 30_000);
    expect(await control.run({ command: 'status' })).toMatchObject({ status: 'SUCCEEDED', output: { state: 'running' } });
  });
});
