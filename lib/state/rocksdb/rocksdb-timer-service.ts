import { InternalError, keyGroupRangeContains, type Key, type KeyGroupRange } from '../../core/index.ts';
import type { InternalTimerService } from '../timers/timer-service.ts';
import type { Bytes } from '../snapshot-format/key-bytes.ts';
import type { Namespace } from '../keyed-state.ts';
import { checkTimerTimestamp, storedTimestamps, type Timer, type TimerDomain, type TimerKeyGroupSnapshot } from '../timer-state.ts';
import type { StateDb } from './state-db.ts';
import type { Row } from './row.ts';
import {
  after,
  decodeIndexEntry,
  domainStart,
  indexEnd,
  indexKey,
  indexPosition,
  indexValue,
  placementAbove,
} from './timer-index.ts';

/** What the timer service needs from its RocksDB keyed state backend (implemented by it). */
export interface TimerRowAccess {
  readonly maxParallelism: number;
  readonly keyGroupRange: KeyGroupRange;
  /** The open database, or undefined while it is still opening. */
  openDb(): StateDb | undefined;
  /** The cached row of `key`, read first when it is not cached; the backend's current key does not change. */
  rowFor(key: Key): Row;
  /** Makes every key of `keys` cached with one synchronous multi-get for the missing ones. */
  cacheRows(keys: readonly Key[]): void;
  /** The id of the reserved state that holds a domain's timers (registered on first use). */
  timerStateId(domain: TimerDomain): number;
}

/** Timers scanned per round: one multi-get of their rows, and the most one pop returns. */
const ROUND = 4096;
/** New index entries buffered before one write batch. */
const FLUSH_ENTRIES = 8192;
/** Scanned index entries between clean-ups while no checkpoint protects them (one range tombstone each). */
export const CLEANUP_AFTER_SCANNED = 16_384;

interface DomainState {
  readonly domain: TimerDomain;
  count: number;
  /** Start (inclusive) of the part of the index no pop has scanned yet. */
  resumeGte: Bytes;
  /** Timers registered below `resumeGte` (already scanned past): they fire at the next pop. */
  due: Timer[];
  /** Earliest pending timestamp when known; null = unknown. */
  next: number | undefined | null;
}

/** How far each domain's index had been consumed at a checkpoint's synchronous phase. */
interface Consumed {
  readonly checkpointId: number;
  readonly event: Bytes;
  readonly processing: Bytes;
}

/**
 * Timers of one keyed operator subtask kept in its RocksDB keyed state backend, so their number is not bounded by
 * the heap (design: docs/state.md "Timers"):
 * - each timer is an entry of its key's row (reserved state per domain: namespace -> ascending timestamps), so it
 *   is cached, written, checkpointed, restored and rescaled with the key's state, and dedup is a lookup in a row
 *   the operator has usually just touched;
 * - a time-ordered index (timer-index.ts) finds the due ones: written in batches, scanned forward from where the
 *   last pop stopped, a round at a time with one multi-get of the rows; an index entry only fires if its row still
 *   holds the timer, so deleted and already fired timers leave stale entries behind instead of costing a write;
 * - scanned index ranges are deleted once a checkpoint taken after the scan completes: until then a local
 *   recovery to an earlier checkpoint may still need them. A timer registered below the scan position fires at
 *   the next pop from a small in-memory list and is indexed just above the position (durable for local recovery).
 * Timers fire in timestamp order; within a timestamp in key-group/key/namespace order.
 */
export class RocksDbTimerService implements InternalTimerService {
  private readonly event: DomainState;
  private readonly processing: DomainState;
  private buffer: Bytes[] = [];
  private consumed: Consumed[] = [];
  /**
   * A checkpoint this database may be locally recovered to exists (restored or completed): scanned entries are
   * then deleted only when a later checkpoint completes. Before that, scanned entries below the oldest pending
   * checkpoint's positions are deleted as pops go (a job without checkpoints would otherwise keep them forever).
   */
  private recoverable = false;
  private scannedSinceCleanup = 0;

  constructor(private readonly access: TimerRowAccess) {
    this.event = newDomain('event');
    this.processing = newDomain('processing');
  }

  registerEventTimeTimer(key: Key, namespace: Namespace, timestamp: number): void {
    this.register(this.event, key, namespace, timestamp);
  }

  deleteEventTimeTimer(key: Key, namespace: Namespace, timestamp: number): void {
    this.delete(this.event, key, namespace, timestamp);
  }

  registerProcessingTimeTimer(key: Key, namespace: Namespace, timestamp: number): void {
    this.register(this.processing, key, namespace, timestamp);
  }

  deleteProcessingTimeTimer(key: Key, namespace: Namespace, timestamp: number): void {
    this.delete(this.processing, key, namespace, timestamp);
  }

  popEventTimeTimers(watermark: number): Timer[] {
    return this.pop(this.event, watermark);
  }

  popProcessingTimeTimers(time: number): Timer[] {
    return this.pop(this.processing, time);
  }

  nextProcessingTime(): number | undefined {
    return this.peek(this.processing);
  }

  nextEventTime(): number | undefined {
    return this.peek(this.event);
  }

  eventTimerCount(): number {
    return this.event.count;
  }

  processingTimerCount(): number {
    return this.processing.count;
  }

  /** None: the timers are part of the keyed state backend's snapshot (rows of their keys). */
  snapshot(): TimerKeyGroupSnapshot[] {
    return [];
  }

  /** Heap timers of a snapshot (a memory backend's savepoint): registered as if new, a chunk of keys per read. */
  restore(snapshot: readonly TimerKeyGroupSnapshot[], range: KeyGroupRange): void {
    const all: [TimerDomain, Timer][] = [];
    for (const group of snapshot) {
      if (!keyGroupRangeContains(range, group.keyGroup)) continue;
      for (const timer of group.eventTimers) all.push(['event', timer]);
      for (const timer of group.processingTimers) all.push(['processing', timer]);
    }
    for (let start = 0; start < all.length; start += ROUND) {
      const chunk = all.slice(start, start + ROUND);
      this.access.cacheRows(chunk.map(([, t]) => t.key));
      for (const [domain, t] of chunk) this.register(domain === 'event' ? this.event : this.processing, t.key, t.namespace, t.timestamp);
    }
  }

  // ---- hooks of the backend ----------------------------------------------------------------------------------

  /**
   * A checkpoint's synchronous phase: notes the scan positions (for cleanup once it completes) and returns the
   * counts its recovery marker records. `flushIndex` must run before that marker is written, so that a local
   * recovery to this checkpoint finds an index entry for every timer its rows hold.
   */
  sealPoint(checkpointId: number): [event: number, processing: number] {
    this.consumed.push({ checkpointId, event: this.event.resumeGte, processing: this.processing.resumeGte });
    return [this.event.count, this.processing.count];
  }

  /** Writes the buffered index entries (one batch). */
  flushIndex(sdb: StateDb): void {
    const buffer = this.buffer;
    if (buffer.length === 0) return;
    const batch = sdb.db.batch();
    for (let i = 0; i < buffer.length; i += 2) batch.put(buffer[i] as Bytes, buffer[i + 1] as Bytes);
    batch.write();
    this.buffer = [];
  }

  /** Checkpoint `checkpointId` completed: index entries scanned before it was taken are not needed any more. */
  completed(sdb: StateDb, checkpointId: number): void {
    let upTo: Consumed | undefined;
    while (this.consumed.length > 0 && (this.consumed[0] as Consumed).checkpointId <= checkpointId) upTo = this.consumed.shift();
    if (upTo === undefined || !sdb.db.isOpen) return;
    this.recoverable = true;
    deleteScanned(sdb, 'event', upTo.event);
    deleteScanned(sdb, 'processing', upTo.processing);
  }

  /** State restored (from files or a local database): counts as stored, scanning from the start of the index. */
  restored(counts: readonly [number, number] | undefined): void {
    for (const d of [this.event, this.processing]) {
      d.resumeGte = domainStart(d.domain);
      d.due = [];
      d.next = null;
    }
    this.event.count = counts?.[0] ?? 0;
    this.processing.count = counts?.[1] ?? 0;
    this.buffer = [];
    this.consumed = [];
    this.recoverable = true;
  }

  // ---- internals ---------------------------------------------------------------------------------------------

  private register(d: DomainState, key: Key, namespace: Namespace, timestamp: number): void {
    checkTimerTimestamp(timestamp);
    const row = this.access.rowFor(key);
    const id = this.access.timerStateId(d.domain);
    const list = row.slot(id)?.get(namespace) as number[] | undefined;
    if (list === undefined) row.slotForWrite(id).set(namespace, [timestamp]);
    else {
      const at = insertionPoint(list, timestamp);
      if (list[at] === timestamp) return;
      row.markDirty();
      list.splice(at, 0, timestamp);
    }
    d.count++;
    if (d.next !== null && (d.next === undefined || timestamp < d.next)) d.next = timestamp;
    const groupKey = row.groupKey();
    let placedAt = timestamp;
    let entry = indexKey(d.domain, placedAt, groupKey, namespace);
    if (Buffer.compare(entry, d.resumeGte) < 0) {
      d.due.push({ timestamp, key, namespace });
      placedAt = placementAbove(d.domain, d.resumeGte);
      entry = indexKey(d.domain, placedAt, groupKey, namespace);
    }
    this.buffer.push(entry, indexValue(timestamp, placedAt));
    if (this.buffer.length >= 2 * FLUSH_ENTRIES) {
      const sdb = this.access.openDb();
      if (sdb !== undefined) this.flushIndex(sdb);
    }
  }

  private delete(d: DomainState, key: Key, namespace: Namespace, timestamp: number): void {
    if (this.removeFromRow(this.access.rowFor(key), this.access.timerStateId(d.domain), namespace, timestamp)) {
      d.count--;
      if (d.next === timestamp) d.next = null;
    }
  }

  /** Removes the timer from its row if the row holds it (the authoritative check behind every index entry). */
  private removeFromRow(row: Row, id: number, namespace: Namespace, timestamp: number): boolean {
    const slot = row.slot(id);
    const list = slot?.get(namespace) as number[] | undefined;
    if (slot === undefined || list === undefined) return false;
    const at = insertionPoint(list, timestamp);
    if (list[at] !== timestamp) return false;
    row.markDirty();
    if (list.length === 1) {
      slot.delete(namespace);
      row.dropIfEmpty(id, slot);
    } else {
      list.splice(at, 1);
    }
    return true;
  }

  private pop(d: DomainState, limit: number): Timer[] {
    if (d.count === 0) {
      // Every index entry up to the limit is stale: skip them without reading.
      d.due = [];
      this.advance(d, indexEnd(d.domain, limit));
      return [];
    }
    const sdb = this.database();
    this.flushIndex(sdb);
    const end = indexEnd(d.domain, limit);
    const id = this.access.timerStateId(d.domain);
    const out: Timer[] = [];
    for (;;) {
      const candidates: Timer[] = d.due.length <= ROUND ? d.due.splice(0) : d.due.splice(0, ROUND);
      let scannedAll = true;
      if (Buffer.compare(d.resumeGte, end) < 0) {
        const want = ROUND - candidates.length;
        if (want <= 0) scannedAll = false;
        else {
          const cursor = sdb.db.cursor(d.resumeGte, end);
          const rows = cursor.next(want);
          cursor.close();
          this.scannedSinceCleanup += rows.length >> 1;
          for (let i = 0; i < rows.length; i += 2) candidates.push(decodeIndexEntry(rows[i] as Buffer, rows[i + 1]));
          if (rows.length >> 1 >= want) {
            scannedAll = false;
            d.resumeGte = after(rows[rows.length - 2] as Buffer);
          } else {
            d.resumeGte = end;
          }
        }
      }
      if (candidates.length > 0) {
        this.access.cacheRows(candidates.map((t) => t.key));
        for (const t of candidates) {
          if (t.timestamp > limit) {
            // A due-list timer cannot be above the limit of a later pop, but a pop with a smaller limit may come.
            d.due.push(t);
            continue;
          }
          if (this.removeFromRow(this.access.rowFor(t.key), id, t.namespace, t.timestamp)) {
            d.count--;
            out.push(t);
          }
        }
      }
      if (out.length > 0 || (scannedAll && d.due.every((t) => t.timestamp > limit))) break;
    }
    if (out.length > 0) d.next = null;
    if (!this.recoverable && this.scannedSinceCleanup >= CLEANUP_AFTER_SCANNED) {
      this.scannedSinceCleanup = 0;
      const pending = this.consumed[0];
      deleteScanned(sdb, 'event', pending?.event ?? this.event.resumeGte);
      deleteScanned(sdb, 'processing', pending?.processing ?? this.processing.resumeGte);
    }
    // Candidates came as due-list timers first, then in index order: sort (stable) by timestamp.
    out.sort((a, b) => a.timestamp - b.timestamp);
    return out;
  }

  /** The earliest pending timestamp: the due list and the first index entries whose rows still hold them. */
  private peek(d: DomainState): number | undefined {
    if (d.count === 0) return undefined;
    if (d.next !== null) return d.next;
    let best = Number.POSITIVE_INFINITY;
    for (const t of d.due) if (t.timestamp < best) best = t.timestamp;
    const sdb = this.database();
    this.flushIndex(sdb);
    const id = this.access.timerStateId(d.domain);
    const cursor = sdb.db.cursor(d.resumeGte, indexEnd(d.domain, Number.POSITIVE_INFINITY));
    try {
      for (let rows = cursor.next(256); rows.length > 0; rows = cursor.next(ROUND)) {
        const entries = [];
        for (let i = 0; i < rows.length; i += 2) entries.push(decodeIndexEntry(rows[i] as Buffer, rows[i + 1]));
        this.access.cacheRows(entries.map((e) => e.key));
        const live = entries.find((e) => holds(this.access.rowFor(e.key), id, e.namespace, e.timestamp));
        if (live !== undefined) {
          best = Math.min(best, live.timestamp);
          break;
        }
        if (entries[0] !== undefined && entries[0].timestamp > best) break;
      }
    } finally {
      cursor.close();
    }
    d.next = best === Number.POSITIVE_INFINITY ? undefined : best;
    return d.next;
  }

  private advance(d: DomainState, position: Bytes): void {
    if (Buffer.compare(position, d.resumeGte) > 0) d.resumeGte = position;
  }

  private database(): StateDb {
    const sdb = this.access.openDb();
    if (sdb === undefined) {
      throw new InternalError('timers were read before the RocksDB keyed state backend finished opening (await its open())');
    }
    return sdb;
  }
}

/** Deletes a domain's index entries below `position`, which pops have scanned (one range tombstone). */
function deleteScanned(sdb: StateDb, domain: TimerDomain, position: Bytes): void {
  // Entries placed at +Infinity (registered after a pop to +Infinity) are kept: such a pop passed them.
  const limit = indexPosition(domain, Number.POSITIVE_INFINITY);
  const lt = Buffer.compare(position, limit) < 0 ? position : limit;
  const start = domainStart(domain);
  if (Buffer.compare(start, lt) < 0) sdb.db.deleteRange(start, lt);
}

function newDomain(domain: TimerDomain): DomainState {
  return { domain, count: 0, resumeGte: domainStart(domain), due: [], next: undefined };
}

function holds(row: Row, id: number, namespace: Namespace, timestamp: number): boolean {
  const list = storedTimestamps(row.slot(id)?.get(namespace));
  return list !== undefined && list[insertionPoint(list, timestamp)] === timestamp;
}

/** First index of `list` (ascending) whose value is >= `timestamp`. */
function insertionPoint(list: readonly number[], timestamp: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((list[mid] as number) < timestamp) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}


