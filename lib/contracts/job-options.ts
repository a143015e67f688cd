import { ConfigError, DEFAULT_MAX_PARALLELISM, MAX_MAX_PARALLELISM } from '../core/index.ts';

/** Job-wide settings. Every field is optional; defaults are documented per field. */
export interface JobOptions {
  /** Default parallelism of every operator that does not set its own. @default 1 */
  parallelism?: number;
  /** Number of key groups: the upper bound for the parallelism of keyed operators, fixed for the job's lifetime. @default 128 */
  maxParallelism?: number;
  /** Most records a source puts in one batch. @default 1024 */
  batchSize?: number;
  /** Batches in flight per channel before the producer waits (backpressure). @default 8 */
  channelCapacity?: number;
}

export interface CompiledJobOptions {
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly batchSize: number;
  readonly channelCapacity: number;
}

function positiveInt(name: string, value: number | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new ConfigError(`${name} must be an integer between 1 and ${max}, got ${String(value)}`);
  }
  return value;
}

/** Validates once and fills in defaults; invalid options stop the job before it starts. */
export function compileJobOptions(options: JobOptions = {}): CompiledJobOptions {
  const maxParallelism = positiveInt('maxParallelism', options.maxParallelism, DEFAULT_MAX_PARALLELISM, MAX_MAX_PARALLELISM);
  const parallelism = positiveInt('parallelism', options.parallelism, 1, 1024);
  return {
    parallelism,
    maxParallelism,
    batchSize: positiveInt('batchSize', options.batchSize, 1024, 1 << 20),
    channelCapacity: positiveInt('channelCapacity', options.channelCapacity, 8, 1 << 16),
  };
}
