// CommitSinks dies halfway through a checkpoint's sink commit: the first DynamoDB sink transaction of the checkpoint
// took effect, then the handler dies before the next one. The state machine's Retry runs CommitSinks again, which
// sends the committed transaction again (its request token or its commit marker says it is done: nothing applied
// twice) and the rest once; the table equals the plain loop's totals exactly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster, TABLE, generateTransactions, referenceTotals, type CoordinatorCall, type Transaction } from '../../scripts/cluster/local-cluster.ts';

interface SinkTransaction {
  readonly token: string;
  /** Which CommitSinks invocation sent it (the runner counts them before each call). */
  readonly invocation: number;
  readonly error: string | undefined;
  readonly crashed: boolean;
  readonly at: number;
}

let cluster: LocalCluster | undefined;
let armed = false;
const sent: SinkTransaction[] = [];

/** A sink commit: a TransactWriteItems that puts a commit marker of the sink (in the job's marker table). */
function isSinkCommit(call: CoordinatorCall): boolean {
  if (call.command !== 'TransactWriteItemsCommand') return false;
  const items = call.input['TransactItems'] as { Put?: { TableName?: string } }[] | undefined;
  return (items ?? []).some((i) => i.Put?.TableName === `${TABLE}-markers`);
}

beforeAll(async () => {
  cluster = await LocalCluster.start({
    parallelism: 2,
    shards: 2,
    leaseDurationMs: 3000,
    coordinatorFault: (call) => {
      if (!isSinkCommit(call)) return false;
      const invocation = cluster?.coordinatorStats.handlerCalls['CommitSinksFunctionArn'] ?? 0;
      // Only the first transaction of an invocation: later ones may belong to a checkpoint the crash then misses.
      const first = !sent.some((t) => t.invocation === invocation);
      const crash = armed && first && call.error === undefined;
      if (crash) armed = false;
      sent.push({ token: String(call.input['ClientRequestToken']), invocation, error: call.error, crashed: crash, at: Date.now() });
      return crash;
    },
  });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

describe('local cluster, CommitSinks dies halfway through a checkpoint\'s commit', () => {
  it('the retry finds the first transaction committed, commits the rest, and the table equals the reference', async () => {
    const c = cluster!;
    const batches = [1, 2].map((seed) => generateTransactions(1500, 40, seed, Date.UTC(2026, 10, seed)));
    await c.feed(batches[0]!);
    const w1 = c.startWorker('w1');
    const w2 = c.startWorker('w2');
    await c.until('each worker to hold one slot', () => ['w1', 'w2'].every((id) => c.heldSlots(id).length === 1), 60_000);
    await c.untilTableEquals(referenceTotals(batches[0]!), 60_000);

    // A crash counts as halfway when the retry had more to send than the crashed transaction. A checkpoint for
    // which only one slot had read anything has one transaction; the crash then lands at its end: go again.
    let halfway: { crashed: SinkTransaction; rest: SinkTransaction[] } | undefined;
    const fed: Transaction[] = [];
    let attempts = 0;
    for (let attempt = 1; attempt <= 5 && halfway === undefined; attempt++) {
      attempts = attempt;
      // Accounts of both slots in every feed: the checkpoint that commits them has a transaction per slot.
      const more = generateTransactions(1000, 40, 10 + attempt, Date.UTC(2026, 10, 10 + attempt));
      await c.feed(more);
      fed.push(...more);
      armed = true;
      await c.until('the injected crash in CommitSinks', () => !armed, 60_000);
      const crashed = sent.filter((t) => t.crashed).at(-1)!;
      await c.until('the retried CommitSinks to commit the checkpoint', () => c.coordinatorEvents('sinks-committed').some((l) => l.at > crashed.at), 60_000);
      const retry = sent.filter((t) => t.invocation === crashed.invocation + 1);
      // The retry sends the crashed transaction again: answered as done (same request token) or refused by its marker.
      expect(retry.map((t) => t.token)).toContain(crashed.token);
      const again = retry.find((t) => t.token === crashed.token)!;
      expect([undefined, 'TransactionCanceledException']).toContain(again.error);
      const rest = retry.filter((t) => t.token !== crashed.token);
      if (rest.length > 0) halfway = { crashed, rest };
    }
    expect(halfway, `a crash halfway through a commit within 5 tries (${attempts})`).toBeDefined();
    // The rest was sent for the first time in the retry, and each succeeded.
    for (const t of halfway!.rest) {
      expect(sent.filter((s) => s.token === t.token && s.invocation < t.invocation)).toEqual([]);
      expect(t.error).toBeUndefined();
    }

    await c.feed(batches[1]!);
    await c.untilTableEquals(referenceTotals([...batches[0]!, ...fed, ...batches[1]!]), 60_000);
    // Each checkpoint's sinks committed once, in order; no Catch -> Abort: the Task's Retry did it.
    const committed = c.coordinatorEvents('sinks-committed').map((l) => l.event['checkpointId'] as number);
    expect(committed).toEqual([...new Set(committed)].sort((a, b) => a - b));
    expect(c.coordinatorStats.handlerCalls['AbortFunctionArn']).toBeUndefined();
    expect(c.workerEvents('slot-failed')).toEqual([]);
    const exits = await c.stop();
    expect(exits).toEqual({ w1: { code: 0, signal: null }, w2: { code: 0, signal: null } });
    expect(w1.stderr.join('') + w2.stderr.join('')).toBe('');
  });
});
