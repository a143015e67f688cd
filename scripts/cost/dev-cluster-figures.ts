/**
 * The quantities the cost model multiplies by prices, in the shape `npm run dev:cluster -- --json` prints them:
 * `perCheckpoint` and `perMillionEvents` objects with the keys of FIGURE_KEYS, and a `method` string saying how they
 * were obtained (measured, or estimated by reading the code paths). Other fields of the document are ignored.
 */
import { ConfigError } from '../../lib/core/errors.ts';

export const FIGURE_KEYS = [
  'stateTransitions',
  'handlerCalls',
  'handlerMs',
  'dynamodbReadUnits',
  'dynamodbWriteUnits',
  's3ClassA',
  's3ClassB',
  'kinesisGetRecords',
  'kinesisPutRecords',
  'stateDirBytesWritten',
] as const;

export type FigureKey = (typeof FIGURE_KEYS)[number];

/** One count per key: state transitions, Lambda calls and their summed ms, DynamoDB units, S3 requests, ... */
export type Figures = Readonly<Record<FigureKey, number>>;

export interface DevClusterFigures {
  readonly perCheckpoint: Figures;
  readonly perMillionEvents: Figures;
  /** How the numbers were obtained: "measured: dev:cluster ..." or "estimated: ...". */
  readonly method: string;
  /** The slot count of the run, when the document says (dev:cluster prints `parallelism`). */
  readonly parallelism?: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function readFigures(doc: Record<string, unknown>, group: 'perCheckpoint' | 'perMillionEvents', where: string): Figures {
  const raw = doc[group];
  if (!isRecord(raw)) {
    throw new ConfigError(
      `${where}: no "${group}" object; the cost model needs the output of \`npm run dev:cluster -- --json\` ` +
        `(with "perCheckpoint" and "perMillionEvents") or a document of the same shape`,
    );
  }
  const figures: Partial<Record<FigureKey, number>> = {};
  for (const key of FIGURE_KEYS) {
    const value = raw[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new ConfigError(
        `${where}: ${group}.${key} must be a finite number >= 0, got ${JSON.stringify(value)}; ` +
          `every one of ${FIGURE_KEYS.join(', ')} is needed`,
      );
    }
    figures[key] = value;
  }
  return figures as Figures;
}

/** Validates a parsed dev:cluster document; `where` names it (the file) in errors. */
export function parseDevClusterFigures(doc: unknown, where: string): DevClusterFigures {
  if (!isRecord(doc)) throw new ConfigError(`${where}: expected a JSON object (the dev:cluster --json document)`);
  const perCheckpoint = readFigures(doc, 'perCheckpoint', where);
  const perMillionEvents = readFigures(doc, 'perMillionEvents', where);
  // The figures engineer may put `method` beside the two objects or inside them; any of the three places counts.
  const method = [doc['method'], (doc['perCheckpoint'] as Record<string, unknown>)['method'], (doc['perMillionEvents'] as Record<string, unknown>)['method']].find(
    (m): m is string => typeof m === 'string' && m.trim() !== '',
  );
  if (method === undefined) {
    throw new ConfigError(`${where}: no "method" string saying how the figures were obtained (measured or estimated)`);
  }
  const parallelism = doc['parallelism'];
  return {
    perCheckpoint,
    perMillionEvents,
    method,
    ...(typeof parallelism === 'number' && Number.isInteger(parallelism) && parallelism > 0 ? { parallelism } : {}),
  };
}
