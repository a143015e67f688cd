import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { US_EAST_1_PRICES, type AwsPrices, type Price } from '../../../scripts/cost/aws-prices.ts';
import {
  DEFAULT_DEPLOYMENT,
  DEFAULT_WORKLOAD,
  SCENARIOS,
  SECONDS_PER_MONTH,
  backgroundDynamodbUnits,
  flinkCost,
  inputStreamCost,
  sluiceCost,
  sluiceUsage,
  type Deployment,
} from '../../../scripts/cost/cost-model.ts';
import { renderCostReport } from '../../../scripts/cost/cost-report.ts';
import { FIGURE_KEYS, parseDevClusterFigures, type DevClusterFigures, type Figures } from '../../../scripts/cost/dev-cluster-figures.ts';

const run = promisify(execFile);

/** Every price a different power of two, so a price used for the wrong line changes the sum. */
function distinctPrices(): AwsPrices {
  const entries = Object.keys(US_EAST_1_PRICES).map((name, i): [string, Price] => [
    name,
    { usd: 2 ** i, unit: name, source: 'test', dated: '2026-12-02' },
  ]);
  return Object.fromEntries(entries) as unknown as AwsPrices;
}

function figures(perCheckpoint: Partial<Figures>, perMillionEvents: Partial<Figures>): DevClusterFigures {
  const zero = Object.fromEntries(FIGURE_KEYS.map((k) => [k, 0])) as Record<string, number>;
  return {
    perCheckpoint: { ...zero, ...perCheckpoint } as Figures,
    perMillionEvents: { ...zero, ...perMillionEvents } as Figures,
    method: 'test',
  };
}

const deployment: Deployment = { ...DEFAULT_DEPLOYMENT, parallelism: 4, workers: 2, leaseDurationMs: 6000, controlPollMs: 1000 };
const GB = 1024 ** 3;

describe('the Sluice cost model', () => {
  it('multiplies per-checkpoint quantities by the checkpoints of a month and per-event ones by its million events', () => {
    const f = figures({ handlerCalls: 3, s3ClassA: 7 }, { handlerCalls: 11, s3ClassB: 13 });
    const u60 = sluiceUsage(f, DEFAULT_WORKLOAD, deployment, { checkpointIntervalS: 60, path: 'aligned', stateStorage: 'efs' });
    const u10 = sluiceUsage(f, DEFAULT_WORKLOAD, deployment, { checkpointIntervalS: 10, path: 'aligned', stateStorage: 'efs' });
    expect(u60.checkpoints).toBe(43_800);
    expect(u10.checkpoints).toBe(262_800);
    expect(u60.millionEvents).toBe(26_280);
    expect(u60.handlerCalls).toBe(3 * 43_800 + 11 * 26_280);
    expect(u10.handlerCalls).toBe(3 * 262_800 + 11 * 26_280);
    expect(u60.s3ClassA).toBe(7 * 43_800);
    expect(u60.s3ClassB).toBe(13 * 26_280);
  });

  it('adds the lease rounds and control polls, which run on the clock', () => {
    // 2 workers, 2 slots each, a round every 2 s: (2 + 1) writes and 2 Queries per round; 1 control read a second.
    const bg = backgroundDynamodbUnits(deployment);
    expect(bg.writeUnits).toBeCloseTo(2 * 0.5 * 3 * SECONDS_PER_MONTH, 6);
    expect(bg.readUnits).toBeCloseTo((2 * 0.5 * 2 + 2 * 1) * SECONDS_PER_MONTH, 6);
    const u = sluiceUsage(figures({ dynamodbWriteUnits: 5 }, { dynamodbReadUnits: 7 }), DEFAULT_WORKLOAD, deployment, {
      checkpointIntervalS: 60,
      path: 'aligned',
      stateStorage: 'ephemeral',
    });
    expect(u.dynamodbWriteUnits).toBeCloseTo(5 * 43_800 + bg.writeUnits, 6);
    expect(u.dynamodbReadUnits).toBeCloseTo(7 * 26_280 + bg.readUnits, 6);
  });

  it('prices each line with its own prices', () => {
    const p = distinctPrices();
    const f = figures(
      { handlerCalls: 2, handlerMs: 500, dynamodbReadUnits: 3, dynamodbWriteUnits: 4, s3ClassA: 5, s3ClassB: 6, stateDirBytesWritten: GB, kinesisPutRecords: 9 },
      { handlerMs: 1000, dynamodbWriteUnits: 8, kinesisPutRecords: 10 },
    );
    const w = DEFAULT_WORKLOAD;
    const d = deployment;
    const s = { checkpointIntervalS: 60, path: 'exchange', stateStorage: 'efs' } as const;
    const c = sluiceCost(f, w, d, s, p);
    const n = 43_800;
    const m = 26_280;
    const bg = backgroundDynamodbUnits(d);
    expect(c.fargate).toBeCloseTo(d.workers * (d.workerVcpu * p.fargateVcpuHour.usd + d.workerMemoryGb * p.fargateGbHour.usd) * 730, 6);
    const cycles = SECONDS_PER_MONTH / d.cycleSeconds;
    expect(c.stepFunctions).toBeCloseTo(
      cycles * 3 * p.stepFunctionsStandardTransition.usd +
        cycles * p.stepFunctionsExpressRequest.usd +
        cycles * 240 * 0.0625 * p.stepFunctionsExpressGbSecond.usd,
      6,
    );
    expect(c.lambda).toBeCloseTo(2 * n * p.lambdaRequest.usd + ((500 * n + 1000 * m) / 1000) * 0.25 * p.lambdaGbSecond.usd, 6);
    expect(c.dynamodb).toBeCloseTo(
      (4 * n + 8 * m + bg.writeUnits) * p.dynamodbWriteRequestUnit.usd + (3 * n + bg.readUnits) * p.dynamodbReadRequestUnit.usd,
      4,
    );
    expect(c.s3).toBeCloseTo(5 * n * p.s3ClassARequest.usd + 6 * n * p.s3ClassBRequest.usd + 1 * 2 * p.s3StorageGbMonth.usd, 6);
    const exchangedBytes = 10_000 * SECONDS_PER_MONTH * 230;
    const units = exchangedBytes / (25 * 1024) + 9 * n + 10 * m;
    expect(c.exchangeStream).toBeCloseTo(4 * 730 * p.kinesisShardHour.usd + units * p.kinesisPutPayloadUnit.usd, 2);
    expect(c.efs).toBeCloseTo(n * p.efsElasticWriteGb.usd + n * 0.5 * p.efsElasticReadGb.usd + 1 * 2 * p.efsStandardGbMonth.usd, 6);
    const logGb = 1 + (n * 20_000) / GB;
    expect(c.cloudwatch).toBeCloseTo(
      44 * p.cloudwatchMetricMonth.usd + 5 * p.cloudwatchAlarmMonth.usd + p.cloudwatchDashboardMonth.usd + logGb * p.cloudwatchLogsIngestedGb.usd,
      6,
    );
    expect(c.total).toBeCloseTo(c.fargate + c.stepFunctions + c.lambda + c.dynamodb + c.s3 + c.exchangeStream + c.efs + c.cloudwatch, 6);
  });

  it('charges the exchange stream only on the exchange path and EFS only with EFS state', () => {
    const f = figures({ stateDirBytesWritten: 1e6, kinesisPutRecords: 64 }, { kinesisPutRecords: 100 });
    const aligned = sluiceCost(f, DEFAULT_WORKLOAD, deployment, { checkpointIntervalS: 10, path: 'aligned', stateStorage: 'ephemeral' }, US_EAST_1_PRICES);
    const exchange = sluiceCost(f, DEFAULT_WORKLOAD, deployment, { checkpointIntervalS: 10, path: 'exchange', stateStorage: 'efs' }, US_EAST_1_PRICES);
    expect(aligned.exchangeStream).toBe(0);
    expect(aligned.efs).toBe(0);
    expect(exchange.exchangeStream).toBeGreaterThan(0);
    expect(exchange.efs).toBeGreaterThan(0);
    expect(exchange.fargate).toBe(aligned.fargate);
  });

  it('covers the eight scenarios of the issue once each', () => {
    const names = SCENARIOS.map((s) => `${s.checkpointIntervalS}/${s.path}/${s.stateStorage}`);
    expect(new Set(names).size).toBe(8);
    expect(names).toContain('10/exchange/ephemeral');
    expect(names).toContain('60/aligned/efs');
  });
});

describe('Managed Flink and the input stream', () => {
  it('bills KPUs, one orchestration KPU, 50 GB of running storage per KPU, backups and plain sink puts', () => {
    const f = flinkCost(DEFAULT_WORKLOAD, DEFAULT_DEPLOYMENT, US_EAST_1_PRICES);
    expect(f.kpus).toBeCloseTo(2 * 0.11 * 730, 9);
    expect(f.orchestration).toBeCloseTo(0.11 * 730, 9);
    expect(f.runningStorage).toBeCloseTo(2 * 50 * 0.1, 9);
    expect(f.backups).toBeCloseTo(0.023, 9);
    // 10,000 keys, one result a minute each: 438 million items of 1 write unit.
    expect(f.sinkWrites).toBeCloseTo(438_000_000 * 0.625e-6, 6);
    expect(f.total).toBeCloseTo(f.kpus + f.orchestration + f.runningStorage + f.backups + f.sinkWrites + f.cloudwatch, 9);
  });

  it('prices the input stream provisioned (shard-hours, PUT payload units) and on-demand (1 KB per record)', () => {
    const c = inputStreamCost(DEFAULT_WORKLOAD, US_EAST_1_PRICES);
    const records = 10_000 * SECONDS_PER_MONTH;
    expect(c.provisioned).toBeCloseTo(8 * 730 * 0.015 + records * 0.014e-6, 6);
    expect(c.onDemand).toBeCloseTo(730 * 0.04 + ((records * 1024) / GB) * 0.08 + ((records * 200) / GB) * 0.04, 6);
  });
});

describe('the dev:cluster figures', () => {
  const complete = {
    method: 'measured',
    parallelism: 4,
    perCheckpoint: Object.fromEntries(FIGURE_KEYS.map((k, i) => [k, i])),
    perMillionEvents: Object.fromEntries(FIGURE_KEYS.map((k, i) => [k, i * 10])),
    checkpointsCompleted: 9,
  };

  it('reads both objects, the method and the parallelism, and ignores the rest of the document', () => {
    const f = parseDevClusterFigures(complete, 'run.json');
    expect(f.perCheckpoint.handlerMs).toBe(FIGURE_KEYS.indexOf('handlerMs'));
    expect(f.perMillionEvents.s3ClassB).toBe(FIGURE_KEYS.indexOf('s3ClassB') * 10);
    expect(f.method).toBe('measured');
    expect(f.parallelism).toBe(4);
  });

  it('takes the method from inside an object too', () => {
    const { method: _, ...rest } = complete;
    const f = parseDevClusterFigures({ ...rest, perCheckpoint: { ...rest.perCheckpoint, method: 'inside' } }, 'run.json');
    expect(f.method).toBe('inside');
  });

  it('refuses a missing or negative quantity, naming the file and the key', () => {
    const { s3ClassA: _, ...without } = complete.perCheckpoint;
    expect(() => parseDevClusterFigures({ ...complete, perCheckpoint: without }, 'run.json')).toThrow(/run\.json: perCheckpoint\.s3ClassA must be/);
    expect(() =>
      parseDevClusterFigures({ ...complete, perMillionEvents: { ...complete.perMillionEvents, handlerMs: -1 } }, 'b.json'),
    ).toThrow(/b\.json: perMillionEvents\.handlerMs/);
    expect(() => parseDevClusterFigures({ perCheckpoint: complete.perCheckpoint }, 'c.json')).toThrow(/no "perMillionEvents"/);
    const { method: _m, ...noMethod } = complete;
    expect(() => parseDevClusterFigures(noMethod, 'd.json')).toThrow(/no "method"/);
  });
});

describe('the report', () => {
  it('has a row per scenario and one for Managed Flink, and marks exchange rows without exchange figures', () => {
    const f = figures({ handlerCalls: 4 }, { dynamodbWriteUnits: 100 });
    const withoutExchange = renderCostReport({ aligned: f, workload: DEFAULT_WORKLOAD, deployment: DEFAULT_DEPLOYMENT, prices: US_EAST_1_PRICES });
    const rows = withoutExchange.split('\n').filter((l) => l.startsWith('| Sluice ') || l.startsWith('| Managed Flink'));
    expect(rows).toHaveLength(9);
    expect(rows.filter((l) => l.includes('exchange*'))).toHaveLength(4);
    const withExchange = renderCostReport({ aligned: f, exchange: f, workload: DEFAULT_WORKLOAD, deployment: DEFAULT_DEPLOYMENT, prices: US_EAST_1_PRICES });
    expect(withExchange).not.toContain('exchange*');
    const total = sluiceCost(f, DEFAULT_WORKLOAD, DEFAULT_DEPLOYMENT, { checkpointIntervalS: 60, path: 'aligned', stateStorage: 'efs' }, US_EAST_1_PRICES).total;
    expect(withExchange).toContain(`| Sluice 60 s, aligned, efs |`);
    expect(withExchange).toContain(`**$${Math.round(total).toLocaleString('en-US')}**`);
  });

  it('is what `npm run cost:aws` prints, and a bad figures file exits 2 naming the key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cost-'));
    const good = join(dir, 'good.json');
    const bad = join(dir, 'bad.json');
    const doc = { method: 'cli test', perCheckpoint: figures({}, {}).perCheckpoint, perMillionEvents: { ...figures({}, {}).perMillionEvents, handlerMs: 7 } };
    writeFileSync(good, JSON.stringify(doc));
    writeFileSync(bad, JSON.stringify({ ...doc, perCheckpoint: { handlerCalls: 1 } }));
    const out = await run('npx', ['tsx', 'scripts/cost/aws-cost.ts', good]);
    expect(out.stdout).toContain('Quantities: aligned — cli test');
    // What `npm run dev:cluster -- --json > file` saves: npm's banner, then the document on one line.
    const saved = join(dir, 'saved.json');
    writeFileSync(saved, `\n> sluice@0.1.0 dev:cluster\n> tsx scripts/cluster/dev-cluster.ts --json\n\n${JSON.stringify({ ...doc, method: 'saved run' })}\n`);
    expect((await run('npx', ['tsx', 'scripts/cost/aws-cost.ts', saved])).stdout).toContain('Quantities: aligned — saved run');
    expect(out.stdout).toContain('| Managed Flink');
    const failed = await run('npx', ['tsx', 'scripts/cost/aws-cost.ts', bad]).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toMatch(/bad\.json: perCheckpoint\.stateTransitions must be a finite number/);
  });
});

describe('docs/aws-cost.md', () => {
  it('holds exactly what cost:aws prints for the figures its "Generated by" line names', async () => {
    const doc = readFileSync('docs/aws-cost.md', 'utf8');
    const command = /Generated by `npm run cost:aws -- ([^`]+)`/.exec(doc)?.[1];
    expect(command, 'the doc names the command that generated its tables').toBeDefined();
    const block = /<!-- cost:aws begin -->\n([\s\S]*)<!-- cost:aws end -->/.exec(doc)?.[1];
    const printed = await run('npx', ['tsx', 'scripts/cost/aws-cost.ts', ...(command ?? '').trim().split(/\s+/)]);
    // Regenerate with that command and paste its output between the markers (docs/aws-cost.md says how).
    expect(block?.trim()).toBe(printed.stdout.trim());
  });
});
