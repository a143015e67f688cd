/**
 * One hand-written baseline over the generator, in its own process (as each engine run is):
 *
 *   node --import tsx bench/nexmark/baselines/run.ts --query q5 --events 10000000 [--rate 10000000] [--seed 0]
 *
 * Ends with the engine runner's line `q5: <events> events in <seconds> s = <rate> events/s` (timing.ts's format),
 * timed from the first generated event to the last result, and the events-per-CPU-second line on stderr.
 */
import { DEFAULT_RATE } from '../config.ts';
import { formatCpuLine, formatMeasurement, wallClock } from '../timing.ts';
import { BASELINES } from './index.ts';
import { driveBaseline } from './drive.ts';

function argument(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const value = i < 0 ? fallback : process.argv[i + 1];
  if (value === undefined) throw new Error(`--${name} is required`);
  return value;
}

const query = argument('query');
const factory = BASELINES[query];
if (factory === undefined) throw new Error(`no baseline for ${query} (there are: ${Object.keys(BASELINES).join(', ')})`);
const events = Number(argument('events', '10000000'));
const rate = Number(argument('rate', String(DEFAULT_RATE)));
const seed = Number(argument('seed', '0'));

let results = 0;
const cpuAtStart = process.cpuUsage();
const start = wallClock();
driveBaseline(factory(), { events, rate, seed }, (out) => {
  results += out.length;
});
const seconds = Math.max(wallClock() - start, 0.001) / 1000;
const used = process.cpuUsage(cpuAtStart);
const measurement = { events, seconds, eventsPerSecond: events / seconds, cpuSeconds: (used.user + used.system) / 1e6 };
process.stderr.write(`${query}: ${results} results\n${formatCpuLine(query, measurement)}\n`);
process.stdout.write(`${formatMeasurement(query, measurement)}\n`);
