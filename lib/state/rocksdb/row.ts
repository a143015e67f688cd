import type { Key } from '../../core/index.ts';
import { encodeGroupKey, type Bytes } from '../snapshot-format/key-bytes.ts';
import { Slot } from './slot.ts';

export { Slot };

/** A checkpoint whose synchronous phase saw this row dirty and that has not written the row yet. */
export interface PendingSeal {
  /** The overflow generation the checkpoint sealed: where the row as it saw it belongs. */
  readonly generation: number;
  /** The row is about to change: encodes it as the checkpoint saw it, for the checkpoint to write, and lets go. */
  capture(row: Row): void;
  /** The row leaves the cache: returns it as the checkpoint saw it (undefined: no state) for the caller to write. */
  take(row: Row): Bytes | undefined;
}

/**
 * All state of one key in the write-behind cache: per state id a slot. A row in the cache is authoritative for
 * its key (it was read from RocksDB, or is known to be absent there); `dirty` rows differ from what RocksDB holds.
 * Every write goes through `markDirty()` before it changes anything: a checkpoint still waiting to write the row
 * (copy-on-write, see RocksDbKeyedStateBackend.snapshot) first takes the row as it was.
 */
export class Row {
  slots: (Slot | undefined)[] = [];
  dirty = false;
  pendingSeal: PendingSeal | undefined;
  /** CLOCK reference bit: set on access, cleared by the eviction sweep (second chance). */
  ref = true;
  /** Some layer of the DB holds state for this key, so writing it empty must write a tombstone. */
  inDb: boolean;
  /** Entries the DB holds for this key: the part of the backend's entry count already accounted for. */
  stored: number;
  private encodedKey: Bytes | undefined;

  constructor(
    readonly key: Key,
    readonly keyGroup: number,
    inDb = false,
    stored = 0,
  ) {
    this.inDb = inDb;
    this.stored = stored;
  }

  /** keyGroup u16 + key bytes: the row's key in state files and (under an area prefix) in RocksDB. */
  groupKey(): Bytes {
    return (this.encodedKey ??= encodeGroupKey(this.keyGroup, this.key));
  }

  setGroupKey(groupKey: Bytes): void {
    this.encodedKey = groupKey;
  }

  slot(id: number): Slot | undefined {
    return this.slots[id];
  }

  markDirty(): void {
    if (this.pendingSeal !== undefined) this.pendingSeal.capture(this);
    this.dirty = true;
  }

  /** The slot of state `id`, created when missing; the row is marked dirty (call before changing the slot). */
  slotForWrite(id: number): Slot {
    this.markDirty();
    return this.ensureSlot(id);
  }

  /** The slot of state `id`, created when missing, without marking the row dirty (a row being decoded). */
  ensureSlot(id: number): Slot {
    let slot = this.slots[id];
    if (slot === undefined) {
      slot = new Slot();
      // Ids are small and dense; filling holes keeps the array packed.
      while (this.slots.length < id) this.slots.push(undefined);
      this.slots[id] = slot;
    }
    return slot;
  }

  /** Removes a slot left empty by a delete. */
  dropIfEmpty(id: number, slot: Slot): void {
    if (slot.size === 0) this.slots[id] = undefined;
  }

  entryCount(): number {
    let count = 0;
    for (const slot of this.slots) if (slot !== undefined) count += slot.size;
    return count;
  }
}
