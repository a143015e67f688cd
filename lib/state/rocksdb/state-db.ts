import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Bytes } from '../snapshot-format/key-bytes.ts';
import { StoredStateCorruptError } from '../snapshot-format/state-errors.ts';
import type { RocksBatch, RocksDb } from './binding.ts';
import {
  MAIN_END,
  MAIN_START,
  OVERFLOW_HEADER_BYTES,
  decodeMarker,
  encodeMarker,
  markerKey,
  markerRange,
  overflowGeneration,
  overflowKey,
  overflowRange,
  stateIdOfNameKey,
  stateNameKey,
  stateNameRange,
  type RecoveryMarker,
} from './db-layout.ts';
import { MergedView, type ViewLayer } from './merged-view.ts';

/** The value of a key looked up through every layer: bytes of its newest row, or undefined when it has none. */
export interface LookedUp {
  readonly value: Buffer | undefined;
  /** Some layer holds an entry (row or tombstone) for the key. */
  readonly inDb: boolean;
}

const EMPTY: Bytes = Buffer.alloc(0);
const PROMOTE_ROWS = 2048;

/**
 * The backend's database seen as layers (db-layout.ts): the main area plus overflow generations, newest wins. A key's
 * state is looked up in every live generation (newest first) and then in the main area, in one multi-get for a whole
 * batch of keys.
 */
export class StateDb {
  constructor(
    readonly db: RocksDb,
    private readonly source: string,
  ) {}

  /**
   * One multi-get for `groupKeys`: per key, the overflow generations that may hold it (`generationsFor`, newest first) and
   * then the main area; each key's newest layer wins.
   */
  readSync(groupKeys: readonly Bytes[], generationsFor: GenerationsFor): LookedUp[] {
    const plan = lookupPlan(groupKeys, generationsFor);
    return pick(this.db.getSync(plan.keys), plan.layers);
  }

  async read(groupKeys: readonly Bytes[], generationsFor: GenerationsFor): Promise<LookedUp[]> {
    const plan = lookupPlan(groupKeys, generationsFor);
    return pick(await this.db.get(plan.keys), plan.layers);
  }

  /** Puts a row (or a tombstone, for `undefined`) into overflow generation `generation`. */
  putOverflow(batch: RocksBatch, generation: number, groupKey: Bytes, row: Bytes | undefined): void {
    batch.put(overflowKey(generation, groupKey), row ?? EMPTY);
  }

  stateNames(): [number, string][] {
    const [gte, lt] = stateNameRange();
    const cursor = this.db.cursor(gte, lt);
    const out: [number, string][] = [];
    for (let rows = cursor.next(1024); rows.length > 0; rows = cursor.next(1024)) {
      for (let i = 0; i < rows.length; i += 2) out.push([stateIdOfNameKey(rows[i] as Buffer), (rows[i + 1] as Buffer).toString('utf8')]);
    }
    cursor.close();
    return out;
  }

  putStateName(batch: RocksBatch, id: number, name: string): void {
    batch.put(stateNameKey(id), Buffer.from(name, 'utf8'));
  }

  putMarker(batch: RocksBatch, marker: RecoveryMarker): void {
    batch.put(markerKey(marker.checkpointId), encodeMarker(marker));
  }

  marker(checkpointId: number): RecoveryMarker | undefined {
    const [bytes] = this.db.getSync([markerKey(checkpointId)]);
    return bytes === undefined || bytes === null ? undefined : decodeMarker(bytes, this.source);
  }

  /** Deletes the markers of checkpoints below `checkpointId` (all when undefined) except `keep`. */
  deleteMarkers(batch: RocksBatch, belowCheckpointId: number | undefined, keep?: number): void {
    const [gte, lt] = markerRange(belowCheckpointId);
    const keepKey = keep === undefined ? undefined : markerKey(keep);
    this.forEachKey(gte, lt, (key) => {
      if (keepKey === undefined || !key.equals(keepKey)) batch.del(key);
    });
  }

  /** Generations that hold overflow rows, ascending (seeks from one generation to the next, reading one key each). */
  overflowGenerations(): number[] {
    const generations: number[] = [];
    let from = 0;
    for (;;) {
      const [gte, lt] = overflowRange(from, 0xffffffff);
      const cursor = this.db.cursor(gte, lt);
      const rows = cursor.next(1);
      cursor.close();
      if (rows.length === 0) return generations;
      const generation = overflowGeneration(rows[0] as Buffer);
      generations.push(generation);
      if (generation >= 0xffffffff) return generations;
      from = generation + 1;
    }
  }

  /** Deletes every overflow row of generations >= `fromGeneration` (state written after the checkpoint being reused). */
  deleteOverflowFrom(fromGeneration: number): void {
    const [gte, lt] = overflowRange(Math.max(0, fromGeneration), 0xffffffff);
    this.db.deleteRange(gte, lt);
  }

  /**
   * Copies generation `generation`'s overflow rows into the main area, a chunk per batch, then drops the generation with one
   * range delete. Every step keeps the layered view unchanged (until the range delete the generation still holds the
   * same rows above the main area), so reads and checkpoints may interleave. `pace` is awaited between chunks
   * (default: one turn of the event loop).
   */
  async promote(generation: number, isCancelled: () => boolean, pace: () => Promise<void> = yieldOnce): Promise<boolean> {
    const [gte, lt] = overflowRange(generation, generation);
    const cursor = this.db.cursor(gte, lt);
    try {
      for (let rows = cursor.next(PROMOTE_ROWS); rows.length > 0; rows = cursor.next(PROMOTE_ROWS)) {
        const batch = this.db.batch();
        for (let i = 0; i < rows.length; i += 2) {
          const main = (rows[i] as Buffer).subarray(OVERFLOW_HEADER_BYTES);
          const value = rows[i + 1] as Buffer;
          if (value.length === 0) batch.del(main);
          else batch.put(main, value);
        }
        batch.write();
        await pace();
        if (isCancelled()) return false;
      }
    } finally {
      cursor.close();
    }
    this.db.deleteRange(gte, lt);
    return true;
  }

  /** Main area plus the given overflow generations (ascending), as one view. */
  view(generations: readonly number[], includeMain: boolean): MergedView {
    const layers: ViewLayer[] = [];
    if (includeMain) layers.push({ cursor: this.db.cursor(MAIN_START, MAIN_END), strip: 0 });
    for (const generation of generations) {
      const [gte, lt] = overflowRange(generation, generation);
      layers.push({ cursor: this.db.cursor(gte, lt), strip: OVERFLOW_HEADER_BYTES });
    }
    return new MergedView(layers);
  }

  /** Main-area rows of `groupKeys` (restore: what a replaced row held). */
  mainRows(groupKeys: readonly Uint8Array[]): (Buffer | undefined)[] {
    return this.db.getSync(groupKeys).map((v) => (v === null ? undefined : v));
  }

  close(): Promise<void> {
    return this.db.close();
  }

  corrupt(problem: string): StoredStateCorruptError {
    return new StoredStateCorruptError(this.source, problem);
  }

  private forEachKey(gte: Bytes, lt: Bytes, visit: (key: Buffer) => void): void {
    const cursor = this.db.cursor(gte, lt);
    try {
      for (let rows = cursor.next(PROMOTE_ROWS); rows.length > 0; rows = cursor.next(PROMOTE_ROWS)) {
        for (let i = 0; i < rows.length; i += 2) visit(rows[i] as Buffer);
      }
    } finally {
      cursor.close();
    }
  }
}

async function yieldOnce(): Promise<void> {
  await yieldToEventLoop();
}

/** Appends to `out` the overflow generations (newest first) that may hold `groupKey`. */
export type GenerationsFor = (groupKey: Uint8Array, out: number[]) => void;

function lookupPlan(groupKeys: readonly Bytes[], generationsFor: GenerationsFor): { keys: Bytes[]; layers: number[] } {
  const keys: Bytes[] = [];
  const layers = new Array<number>(groupKeys.length);
  const generations: number[] = [];
  for (let i = 0; i < groupKeys.length; i++) {
    const groupKey = groupKeys[i] as Bytes;
    generations.length = 0;
    generationsFor(groupKey, generations);
    for (const generation of generations) keys.push(overflowKey(generation, groupKey));
    keys.push(groupKey);
    layers[i] = generations.length + 1;
  }
  return { keys, layers };
}

/** Each key's newest layer from a multi-get laid out by `lookupPlan`. */
function pick(values: readonly (Buffer | undefined | null)[], layers: readonly number[]): LookedUp[] {
  const out = new Array<LookedUp>(layers.length);
  let j = 0;
  for (let i = 0; i < layers.length; i++) {
    let found: LookedUp = NOT_FOUND;
    for (const end = j + (layers[i] as number); j < end; j++) {
      const v = values[j];
      if (found !== NOT_FOUND || v === undefined || v === null) continue;
      found = v.length === 0 ? TOMBSTONE : { value: v, inDb: true };
    }
    out[i] = found;
  }
  return out;
}

const NOT_FOUND: LookedUp = Object.freeze({ value: undefined, inDb: false });
const TOMBSTONE: LookedUp = Object.freeze({ value: undefined, inDb: true });
