import { ConfigError } from 'sluice';

/**
 * What the generator makes. Defaults follow Apache Beam's NexmarkConfiguration, except the event rate, which
 * follows the Flink Nexmark suite (10 M events/s of event time, the rate behind its published figures).
 */
export interface NexmarkOptions {
  /** Same seed, same events: at any parallelism and in any batch order. Reduced to 32 bits. @default 0 */
  readonly seed?: number;
  /** Number of events (bounded). @default 100,000 */
  readonly events?: number;
  /** Events per second of synthetic event time: event n happens at baseTime + floor(n * 1000 / rate). @default 10,000,000 */
  readonly rate?: number;
  /** Event time of event 0, epoch ms. @default 1436918400000 (2015-07-15T00:00:00Z) */
  readonly baseTime?: number;
  /** Events are emitted in a pseudo-random order within groups of this many (1: in order). @default 1 */
  readonly outOfOrderGroupSize?: number;
  /** 1 in this many bids is for a random in-flight auction, the others for the hot one. @default 2 */
  readonly hotAuctionRatio?: number;
  /** 1 in this many auctions is by a random active person, the others by the hot seller. @default 4 */
  readonly hotSellersRatio?: number;
  /** 1 in this many bids is by a random active person, the others by the hot bidder. @default 4 */
  readonly hotBiddersRatio?: number;
  /** Auctions a random bid chooses from (the latest ones), and the average auction length in auctions. @default 100 */
  readonly numInFlightAuctions?: number;
  /** People a random seller or bidder is chosen from (the latest ones). @default 1000 */
  readonly numActivePeople?: number;
  /** Average size in bytes of a person / auction / bid event, reached with the `extra` field. @default 200 / 500 / 100 */
  readonly avgPersonByteSize?: number;
  readonly avgAuctionByteSize?: number;
  readonly avgBidByteSize?: number;
}

export type NexmarkConfig = { readonly [K in keyof NexmarkOptions]-?: number };

export const DEFAULT_RATE = 10_000_000;
/** 2015-07-15T00:00:00Z. */
export const DEFAULT_BASE_TIME = 1_436_918_400_000;
/** Longest `extra` padding; the generator's string pools are sized for it. */
export const MAX_AVG_BYTE_SIZE = 16_384;

function check(name: keyof NexmarkOptions, value: number | undefined, fallback: number, ok: (v: number) => boolean, what: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !ok(value)) throw new ConfigError(`nexmark: ${name} must be ${what}, got ${String(value)}`);
  return value;
}

const safeInteger = (min: number) => (v: number) => Number.isSafeInteger(v) && v >= min;
const sizeInBytes = (v: number) => Number.isSafeInteger(v) && v >= 0 && v <= MAX_AVG_BYTE_SIZE;

/** Checks options and fills in the defaults. */
export function nexmarkConfig(options: NexmarkOptions = {}): NexmarkConfig {
  return {
    seed: check('seed', options.seed, 0, Number.isFinite, 'a finite number'),
    events: check('events', options.events, 100_000, safeInteger(0), 'a whole number >= 0'),
    rate: check('rate', options.rate, DEFAULT_RATE, (v) => Number.isSafeInteger(v) && v > 0 && v <= 1e9, 'a whole number of events per second in 1..1e9'),
    baseTime: check('baseTime', options.baseTime, DEFAULT_BASE_TIME, safeInteger(0), 'epoch milliseconds'),
    // Positions are permuted within a group by multiplying with 953: a multiple of 953 would repeat events.
    outOfOrderGroupSize: check('outOfOrderGroupSize', options.outOfOrderGroupSize, 1, (v) => safeInteger(1)(v) && v % 953 !== 0, 'a whole number >= 1, not a multiple of 953'),
    hotAuctionRatio: check('hotAuctionRatio', options.hotAuctionRatio, 2, safeInteger(1), 'a whole number >= 1'),
    hotSellersRatio: check('hotSellersRatio', options.hotSellersRatio, 4, safeInteger(1), 'a whole number >= 1'),
    hotBiddersRatio: check('hotBiddersRatio', options.hotBiddersRatio, 4, safeInteger(1), 'a whole number >= 1'),
    numInFlightAuctions: check('numInFlightAuctions', options.numInFlightAuctions, 100, safeInteger(1), 'a whole number >= 1'),
    numActivePeople: check('numActivePeople', options.numActivePeople, 1000, safeInteger(1), 'a whole number >= 1'),
    avgPersonByteSize: check('avgPersonByteSize', options.avgPersonByteSize, 200, sizeInBytes, `a whole number of bytes <= ${MAX_AVG_BYTE_SIZE}`),
    avgAuctionByteSize: check('avgAuctionByteSize', options.avgAuctionByteSize, 500, sizeInBytes, `a whole number of bytes <= ${MAX_AVG_BYTE_SIZE}`),
    avgBidByteSize: check('avgBidByteSize', options.avgBidByteSize, 100, sizeInBytes, `a whole number of bytes <= ${MAX_AVG_BYTE_SIZE}`),
  };
}
