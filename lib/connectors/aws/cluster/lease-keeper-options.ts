import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { ConfigError, systemClock, type Clock } from '../../../core/index.ts';

/** The timer functions the keeper schedules its rounds with; tests pass ones driven by a manual clock. */
export interface LeaseTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface LeaseKeeperOptions {
  /**
   * This worker's id in lease items and heartbeats. Must be unique per running process: two processes sharing one
   * would renew each other's leases.
   * @default `<hostname>-<pid>-<8 random hex digits>`
   */
  readonly workerId?: string;
  /** A lease is taken from its owner when its counter has not moved for this long on the taker's clock. @default 10000 */
  readonly leaseDurationMs?: number;
  /** The most slots this worker takes. @default no limit */
  readonly maxSlots?: number;
  /** P, the job's slot count. @default read from the job's `config` item (rounds wait until it exists) */
  readonly slotCount?: number;
  /** @default the system clock */
  readonly clock?: Clock;
  /** @default the global setTimeout / clearTimeout */
  readonly timers?: LeaseTimers;
  /** A round failed (it is tried again at the next one), e.g. throttling. @default ignored */
  readonly onError?: (error: unknown) => void;
}

export interface CompiledLeaseKeeperOptions {
  readonly workerId: string;
  readonly leaseDurationMs: number;
  /** Rounds (renew, heartbeat, read, decide): every third of the lease. */
  readonly roundIntervalMs: number;
  readonly maxSlots: number;
  readonly slotCount: number | undefined;
  readonly clock: Clock;
  readonly timers: LeaseTimers;
  readonly onError: (error: unknown) => void;
}

const globalTimers: LeaseTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export function defaultWorkerId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

export function compileLeaseKeeperOptions(options: LeaseKeeperOptions = {}): CompiledLeaseKeeperOptions {
  const leaseDurationMs = options.leaseDurationMs ?? 10_000;
  if (!Number.isSafeInteger(leaseDurationMs) || leaseDurationMs < 30) {
    throw new ConfigError(`leaseDurationMs must be an integer of at least 30 (ms), got ${leaseDurationMs}`);
  }
  const maxSlots = options.maxSlots ?? Number.POSITIVE_INFINITY;
  if (maxSlots !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(maxSlots) || maxSlots < 1)) {
    throw new ConfigError(`maxSlots must be a positive integer, got ${maxSlots}`);
  }
  if (options.slotCount !== undefined && (!Number.isSafeInteger(options.slotCount) || options.slotCount < 1)) {
    throw new ConfigError(`slotCount must be a positive integer, got ${options.slotCount}`);
  }
  const workerId = options.workerId ?? defaultWorkerId();
  if (workerId === '' || workerId.length > 200) throw new ConfigError(`workerId must be 1 to 200 characters, got "${workerId}"`);
  return {
    workerId,
    leaseDurationMs,
    roundIntervalMs: Math.floor(leaseDurationMs / 3),
    maxSlots,
    slotCount: options.slotCount,
    clock: options.clock ?? systemClock,
    timers: options.timers ?? globalTimers,
    onError: options.onError ?? (() => {}),
  };
}
