/**
 * The markdown tables of docs/aws-cost.md: the quantities used, the monthly cost of each scenario against Managed
 * Flink, the input stream both pay, and the prices with their sources. Pure: the CLI (aws-cost.ts) prints it.
 */
import type { AwsPrices } from './aws-prices.ts';
import {
  SCENARIOS,
  backgroundDynamodbUnits,
  flinkCost,
  inputStreamCost,
  sluiceCost,
  type Deployment,
  type Workload,
} from './cost-model.ts';
import { FIGURE_KEYS, type DevClusterFigures } from './dev-cluster-figures.ts';

export interface CostReportInput {
  readonly aligned: DevClusterFigures;
  /** Figures of a run with an exchange edge; without them the exchange rows use the aligned ones (marked). */
  readonly exchange?: DevClusterFigures;
  readonly workload: Workload;
  readonly deployment: Deployment;
  readonly prices: AwsPrices;
}

function usd(value: number): string {
  if (value === 0) return '-';
  return value < 10 ? `$${value.toFixed(2)}` : `$${Math.round(value).toLocaleString('en-US')}`;
}

function count(value: number): string {
  return Number.isInteger(value) ? value.toLocaleString('en-US') : value.toLocaleString('en-US', { maximumFractionDigits: 2 });
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export function renderCostReport(input: CostReportInput): string {
  const { aligned, workload: w, deployment: d, prices: p } = input;
  const exchange = input.exchange ?? aligned;
  const parts: string[] = [];

  parts.push(
    `Quantities: aligned — ${aligned.method}` +
      (input.exchange === undefined
        ? '; exchange rows reuse them plus the modeled exchange traffic (no exchange run given).'
        : `; exchange — ${input.exchange.method}.`),
  );

  const qHeader = ['quantity', 'aligned per checkpoint', 'aligned per million events'];
  if (input.exchange !== undefined) qHeader.push('exchange per checkpoint', 'exchange per million events');
  parts.push(
    table(
      qHeader,
      FIGURE_KEYS.map((key) => [
        `\`${key}\``,
        count(aligned.perCheckpoint[key]),
        count(aligned.perMillionEvents[key]),
        ...(input.exchange === undefined ? [] : [count(input.exchange.perCheckpoint[key]), count(input.exchange.perMillionEvents[key])]),
      ]),
    ),
  );

  const bg = backgroundDynamodbUnits(d);
  parts.push(
    `Deployment: P = ${d.parallelism} slots on ${d.workers} Fargate tasks of ${d.workerVcpu} vCPU / ${d.workerMemoryGb} GB; ` +
      `lease ${d.leaseDurationMs} ms and control poll ${d.controlPollMs} ms add ${count(Math.round(bg.writeUnits / 1e6 * 100) / 100)} M ` +
      `write and ${count(Math.round(bg.readUnits / 1e6 * 100) / 100)} M read units a month whatever the interval. ` +
      `Workload: ${count(w.eventsPerSecond)} events/s of ${w.eventBytes} B, ${count(w.keys)} keys, ${w.windowSeconds} s windows, ` +
      `${w.stateGb} GB state. Months of ${730} hours.`,
  );

  const rows = SCENARIOS.map((s) => {
    const c = sluiceCost(s.path === 'exchange' ? exchange : aligned, w, d, s, p);
    const millionEvents = (w.eventsPerSecond * 730 * 3600) / 1e6;
    return [
      `Sluice ${s.checkpointIntervalS} s, ${s.path}${s.path === 'exchange' && input.exchange === undefined ? '*' : ''}, ${s.stateStorage}`,
      usd(c.fargate),
      usd(c.stepFunctions),
      usd(c.lambda),
      usd(c.dynamodb),
      usd(c.s3),
      usd(c.exchangeStream),
      usd(c.efs),
      usd(c.cloudwatch),
      `**${usd(c.total)}**`,
      `$${(c.total / millionEvents).toFixed(4)}`,
    ];
  });
  const f = flinkCost(w, d, p);
  const millionEvents = (w.eventsPerSecond * 730 * 3600) / 1e6;
  rows.push([
    `Managed Flink, ${d.flinkKpus} KPU + 1 orchestration (any interval)`,
    `${usd(f.kpus + f.orchestration)} (KPU)`,
    '-',
    '-',
    `${usd(f.sinkWrites)} (sink)`,
    `${usd(f.runningStorage + f.backups)} (storage)`,
    '-',
    '-',
    usd(f.cloudwatch),
    `**${usd(f.total)}**`,
    `$${(f.total / millionEvents).toFixed(4)}`,
  ]);
  parts.push(
    table(
      ['per month', 'Fargate', 'Step Functions', 'Lambda', 'DynamoDB', 'S3', 'exchange stream', 'EFS', 'CloudWatch', 'total', 'per million events'],
      rows,
    ),
  );

  const input_ = inputStreamCost(w, p);
  parts.push(
    `Both runtimes also pay for the input stream: ${w.inputShards} provisioned shards and the producers' PUT payload ` +
      `units come to ${usd(input_.provisioned)} a month (on-demand mode: ${usd(input_.onDemand)}, each ${w.eventBytes} B ` +
      `record is billed as 1 KB written).`,
  );

  const sources = [...new Set(Object.values(p).map((price) => price.source))];
  parts.push(
    table(
      ['price (us-east-1)', 'USD', 'per', 'dated', 'source'],
      Object.entries(p).map(([name, price]) => [
        `\`${name}\``,
        price.usd >= 0.001 ? String(Number(price.usd.toPrecision(6))) : `${Number((price.usd * 1e6).toPrecision(6))} per million`,
        price.unit,
        price.dated,
        `[${sources.indexOf(price.source) + 1}]`,
      ]),
    ),
  );
  parts.push(sources.map((source, i) => `[${i + 1}] ${source}`).join('  \n'));
  return parts.join('\n\n') + '\n';
}
