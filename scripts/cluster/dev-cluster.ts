/**
 * `npm run dev:cluster`: a cluster job end to end on this machine, no account needed (scripts/cluster/local-cluster.ts):
 * emulators, `sluice aws init`, the coordinator's state machines in this process, W `sluice worker` processes running
 * examples/cluster-account-totals.ts (aligned: keyBy(account, {keyGroups: 'kinesis-hash'}) behind the Kinesis
 * source, running totals, DynamoDB two-phase-commit sink committed by the coordinator), or with --exchange
 * examples/cluster-merchant-totals.ts (totals per merchant from the stream partitioned by account: the keyBy goes
 * through an internal exchange stream of P shards). Feeds the records, optionally kills a worker with SIGKILL, waits
 * until the table equals a plain loop's totals, measures a record's latency from put to committed row with a few
 * probe records, then stops the job (`sluice aws stop`) and the workers (SIGTERM, exit 0 expected), and prints a
 * summary.
 *
 *   npm run dev:cluster [-- --workers 3 --parallelism 4 --shards 4 --records 20000 --exchange --kill-after-ms N --json --verbose]
 *
 * Exit 0 when the table equals the reference and every surviving worker exited 0; 1 otherwise; 2 for bad usage.
 */
import { parseArgs } from 'node:util';
import {
  LocalCluster,
  checkpointDurations,
  generateTransactions,
  percentile,
  referenceMerchantTotals,
  referenceTotals,
  withMerchants,
  tableDifferences,
  waitUntil,
} from './local-cluster.ts';
import { runInPrivateNetwork } from '../../test/harness/aws/private-network.ts';
import { diffCounts, snapshotCounts } from './aws-call-counts.ts';
import { costFigures } from './cost-figures.ts';
import { runEmbedded, type EmbeddedRun } from './embedded-run.ts';
import { failoverTimes } from './failover-times.ts';

const USAGE =
  'usage: npm run dev:cluster [-- --workers W --parallelism P --shards N --records R --accounts A --exchange --merchants M --probes K --lease-duration-ms MS --kill-after-ms MS --state-dir-per-worker --embedded --json --verbose]';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '2' },
    parallelism: { type: 'string', default: '2' },
    shards: { type: 'string', default: '2' },
    records: { type: 'string', default: '20000' },
    accounts: { type: 'string', default: '200' },
    merchants: { type: 'string', default: '50' },
    probes: { type: 'string', default: '5' },
    'lease-duration-ms': { type: 'string', default: '3000' },
    'kill-after-ms': { type: 'string' },
    'timeout-ms': { type: 'string', default: '300000' },
    exchange: { type: 'boolean', default: false },
    'state-dir-per-worker': { type: 'boolean', default: false },
    embedded: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
  },
});

function positiveInt(name: string, raw: string | undefined, min = 1): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    console.error(`dev:cluster: --${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}\n${USAGE}`);
    process.exit(2);
  }
  return n;
}

const workers = positiveInt('workers', values.workers);
const parallelism = positiveInt('parallelism', values.parallelism);
const shards = positiveInt('shards', values.shards);
const records = positiveInt('records', values.records);
const accounts = positiveInt('accounts', values.accounts);
const merchants = positiveInt('merchants', values.merchants);
const probes = positiveInt('probes', values.probes, 0);
const exchange = values.exchange;
const leaseDurationMs = positiveInt('lease-duration-ms', values['lease-duration-ms'], 300);
const timeoutMs = positiveInt('timeout-ms', values['timeout-ms']);
const killAfterMs = values['kill-after-ms'] === undefined ? undefined : positiveInt('kill-after-ms', values['kill-after-ms'], 0);
if (killAfterMs !== undefined && workers < 2) {
  console.error(`dev:cluster: --kill-after-ms needs --workers 2 or more (a survivor must take the slots)\n${USAGE}`);
  process.exit(2);
}

await runInPrivateNetwork('dev:cluster', import.meta.url, main);

async function main(): Promise<number> {
  const say = (text: string): void => {
    if (!values.json) console.log(text);
  };
  say(`starting kinesalite, s3rver and DynamoDB Local; sluice aws init (P=${parallelism}${exchange ? ', exchange stream of P shards' : ''}); the coordinator ...`);
  const started = Date.now();
  const cluster = await LocalCluster.start({
    parallelism,
    shards,
    leaseDurationMs,
    exchange,
    countCalls: true,
    stateDirPerWorker: values['state-dir-per-worker'],
    onEvent: values.verbose ? (source, event) => console.error(`${source} ${JSON.stringify(event)}`) : undefined,
  });
  let stopped = false;
  // Interrupted (Ctrl-C, a test's timeout): stop the workers and emulators rather than leave them running.
  const interrupt = (signal: NodeJS.Signals): void => {
    if (stopped) return;
    stopped = true;
    void cluster.stop().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    const generated = generateTransactions(records, accounts, 42);
    const input = exchange ? withMerchants(generated, merchants) : generated;
    const reference = exchange ? referenceMerchantTotals(input) : referenceTotals(input);
    const half = Math.floor(input.length / 2);
    await cluster.feed(input.slice(0, half));
    say(`stream "transactions" (${shards} shards): ${half} records put; starting ${workers} workers`);
    // The counted window: from the workers' start (every record is read in it) to the table's convergence.
    const windowStart = { at: Date.now(), calls: snapshotCounts(cluster.calls), sfn: cluster.stepFunctionsStats(), bytes: await cluster.stateDirBytesWritten(), checkpoints: cluster.coordinatorEvents('checkpoint-completed').length };
    for (let i = 1; i <= workers; i++) cluster.startWorker(`w${i}`);
    await waitUntil('every slot to start', () => new Set(cluster.workerEvents('slot-started').map((l) => l.event['slot'])).size === parallelism, 120_000);
    const running = Date.now();
    await cluster.feed(input.slice(half));
    say(`${input.length - half} more records put`);

    let failover: { worker: string; slots: number[]; killedAt: number; ms?: number; detectMs?: number; restoreMs?: number; restoreReportedMs?: number; restore?: string } | undefined;
    if (killAfterMs !== undefined) {
      await new Promise((resolve) => setTimeout(resolve, killAfterMs));
      // A worker that holds a slot now: one whose slots balancing handed over would make a vacuous failover.
      const victim = [...cluster.workers.values()].find((w) => cluster.heldSlots(w.id).length > 0) ?? [...cluster.workers.values()][0]!;
      const slots = cluster.heldSlots(victim.id).sort((a, b) => a - b);
      const killedAt = Date.now();
      victim.child.kill('SIGKILL');
      failover = { worker: victim.id, slots, killedAt };
      say(`SIGKILL ${victim.id} (slots ${slots.join(', ')})`);
      await waitUntil(
        'the killed worker\'s slots to start elsewhere',
        () => slots.every((s) => cluster.log.some((l) => l.at > killedAt && l.source !== `worker:${victim.id}` && l.event['event'] === 'slot-started' && l.event['slot'] === s)),
        120_000,
      );
      const restarts = cluster.log.filter((l) => l.at > killedAt && l.event['event'] === 'slot-started' && slots.includes(l.event['slot'] as number));
      failover.ms = Math.max(...restarts.map((l) => l.at)) - killedAt;
      Object.assign(failover, failoverTimes(cluster.log, victim.id, slots, killedAt) ?? {});
      say(`failover: slots ${slots.join(', ')} running again ${failover.ms} ms after the SIGKILL (lease taken after ${failover.detectMs} ms, restore ${failover.restore} ${failover.restoreMs} ms)`);
    }

    let differences: string[] = [];
    const equal = await waitUntil(
      'the table to equal the reference',
      async () => {
        differences = tableDifferences(reference, await cluster.table());
        return differences.length === 0;
      },
      timeoutMs,
      500,
    ).then(
      () => true,
      () => false,
    );
    const convergedMs = Date.now() - running;
    const windowEnd = { at: Date.now(), calls: snapshotCounts(cluster.calls), sfn: cluster.stepFunctionsStats(), bytes: await cluster.stateDirBytesWritten(), checkpoints: cluster.coordinatorEvents('checkpoint-completed').length };
    const figures = costFigures({
      checkpoints: windowEnd.checkpoints - windowStart.checkpoints,
      events: records,
      ms: windowEnd.at - windowStart.at,
      calls: diffCounts(windowEnd.calls, windowStart.calls),
      stepFunctions: {
        supervisorTransitions: windowEnd.sfn.supervisorTransitions - windowStart.sfn.supervisorTransitions,
        cyclesTransitions: windowEnd.sfn.cyclesTransitions - windowStart.sfn.cyclesTransitions,
        handlerCalls: diffRecord(windowEnd.sfn.handlerCalls, windowStart.sfn.handlerCalls),
        handlerMs: diffRecord(windowEnd.sfn.handlerMs, windowStart.sfn.handlerMs),
      },
      stateDirBytesWritten: windowEnd.bytes - windowStart.bytes,
      sinkTables: [cluster.tableName, `${cluster.tableName}-markers`],
    });
    const windowCalls = diffCounts(windowEnd.calls, windowStart.calls);
    // A record's latency from put to committed row, on the idle job: one probe record at a time, a key of its own.
    const latencies: number[] = [];
    for (let i = 0; equal && i < probes; i++) {
      const key = `probe-${i}`;
      const put = Date.now();
      await cluster.feed([{ account: key, merchant: key, amountCents: 1, ts: put }]);
      const arrived = await waitUntil(`probe ${i} in the table`, async () => (await cluster.table()).has(key), 60_000, 50).then(
        () => true,
        () => false,
      );
      if (arrived) latencies.push(Date.now() - put);
    }

    let embedded: EmbeddedRun | undefined;
    const stop = await cluster.sluice(['aws', 'stop', '--job-id', cluster.jobId, '--control-table', 'sluice-control', '--timeout-ms', '120000']);
    const savepoint = stop.stdout.trim();
    if (values.embedded) {
      // After the cluster's halt (its workers idle), on the same emulators: the same job, `sluice run`.
      say('running the same job embedded (sluice run) for its checkpoint durations ...');
      embedded = await runEmbedded(cluster, input, reference, { parallelism, shards, checkpointIntervalMs: cluster.options.checkpointIntervalMs, timeoutMs });
    }
    const exits = await cluster.stop();
    stopped = true;
    const survivors = Object.entries(exits).filter(([id]) => id !== failover?.worker);
    const cleanExits = survivors.every(([, e]) => e.code === 0);

    const durations = checkpointDurations(cluster.log);
    const events: Record<string, number> = {};
    for (const l of cluster.log) {
      const kind = `${l.source.startsWith('worker:') ? 'worker' : l.source}:${String(l.event['event'])}`;
      events[kind] = (events[kind] ?? 0) + 1;
    }
    const summary = {
      ok: equal && cleanExits && stop.code === 0 && (embedded === undefined || embedded.tableEqualsReference),
      workers,
      parallelism,
      shards,
      records,
      accounts: reference.size,
      tableEqualsReference: equal,
      differences: differences.slice(0, 10),
      convergedMs,
      totalMs: Date.now() - started,
      checkpointsCompleted: cluster.coordinatorEvents('checkpoint-completed').length,
      checkpointsAborted: cluster.coordinatorEvents('checkpoint-aborted').length,
      checkpointMs: { p50: percentile(durations, 50), p95: percentile(durations, 95), max: percentile(durations, 100) },
      checkpointIntervalMs: cluster.options.checkpointIntervalMs,
      exchange,
      recordLatencyMs: { probes: latencies.length, p50: percentile(latencies, 50), max: percentile(latencies, 100) },
      failover:
        failover === undefined
          ? undefined
          : { worker: failover.worker, slots: failover.slots, ms: failover.ms, detectMs: failover.detectMs, restoreMs: failover.restoreMs, restoreReportedMs: failover.restoreReportedMs, restore: failover.restore, stateDirPerWorker: values['state-dir-per-worker'] },
      perCheckpoint: figures.perCheckpoint,
      perMillionEvents: figures.perMillionEvents,
      window: figures.window,
      method: figures.method,
      calls: windowCalls,
      embedded:
        embedded === undefined
          ? undefined
          : {
              tableEqualsReference: embedded.tableEqualsReference,
              convergedMs: embedded.convergedMs,
              checkpointsCompleted: embedded.checkpointDurations.length,
              checkpointMs: { p50: percentile(embedded.checkpointDurations, 50), p95: percentile(embedded.checkpointDurations, 95), max: percentile(embedded.checkpointDurations, 100) },
              stopCode: embedded.stopCode,
            },
      stop: { code: stop.code, savepoint: stop.code === 0 ? savepoint : stop.stderr.trim() },
      exits,
      events,
    };
    if (values.json) {
      console.log(JSON.stringify(summary));
    } else {
      say(`\ncheckpoints completed: ${summary.checkpointsCompleted} (aborted ${summary.checkpointsAborted}); duration p50 ${summary.checkpointMs.p50} ms, p95 ${summary.checkpointMs.p95} ms`);
      if (latencies.length > 0) {
        say(`record latency, put -> committed row (${latencies.length} probes, checkpoint interval ${cluster.options.checkpointIntervalMs} ms${exchange ? ', one exchange hop' : ''}): p50 ${summary.recordLatencyMs.p50} ms, max ${summary.recordLatencyMs.max} ms`);
      }
      if (embedded !== undefined) {
        const e = summary.embedded!;
        say(`embedded (sluice run, same job, P=${parallelism}): ${e.checkpointsCompleted} checkpoints, duration p50 ${e.checkpointMs.p50} ms, p95 ${e.checkpointMs.p95} ms; table ${e.tableEqualsReference ? 'equal' : 'NOT equal'} after ${e.convergedMs} ms`);
      }
      if (failover !== undefined) say(`failover after SIGKILL of ${failover.worker}: ${failover.ms} ms (lease ${leaseDurationMs} ms; detect ${failover.detectMs} ms, restore ${failover.restore} ${failover.restoreMs} ms)`);
      say(`per checkpoint (${figures.window.checkpoints} in the counted window): ${JSON.stringify(figures.perCheckpoint, (k, v: unknown) => (k === 'method' ? undefined : v))}`);
      say(`per million events (${figures.window.events} in the window): ${JSON.stringify(figures.perMillionEvents, (k, v: unknown) => (k === 'method' ? undefined : v))}`);
      say(`sluice aws stop: exit ${stop.code}${stop.code === 0 ? `, savepoint ${savepoint}` : `: ${stop.stderr.trim()}`}`);
      say(`worker exits: ${Object.entries(exits).map(([id, e]) => `${id} ${e.code ?? e.signal}`).join(', ')}`);
      say(`events: ${Object.entries(events).map(([k, n]) => `${k} ${n}`).join(', ')}`);
      if (equal) say(`OK: the table equals the reference (${reference.size} accounts, ${records} transactions) ${convergedMs} ms after the workers ran`);
      else console.error(`MISMATCH: ${differences.length} accounts differ, e.g. ${differences.slice(0, 5).join('; ')}`);
      for (const [id, w] of cluster.workers) if (!cleanExits && w.stderr.length > 0) console.error(`${id} stderr:\n${w.stderr.join('').slice(-3000)}`);
    }
    return summary.ok ? 0 : 1;
  } finally {
    if (!stopped) await cluster.stop();
  }
}

function diffRecord(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
}
