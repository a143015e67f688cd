import { hashKey, KeyFilter, secondHash } from './key-filter.ts';

/**
 * Bookkeeping of the overflow epochs (see docs/state.md): rows leaving the cache go to the current epoch; a
 * checkpoint's synchronous phase writes the dirty cache into it and seals it (the next epoch starts); sealed
 * epochs that a complete checkpoint covers are promoted into the main area in the background.
 */
export class EpochLog {
  /** Live epochs, ascending; the last is the current one. */
  private live: number[] = [0];
  /** Rows written per live epoch (epochs found in a recovered database count 1: their size is unknown). */
  private readonly rows = new Map<number, number>([[0, 0]]);
  private lookup: number[] | undefined;
  /** Keys written per live epoch; none for epochs found in a recovered database (they may hold any key). */
  private readonly filters = new Map<number, KeyFilter>([[0, new KeyFilter()]]);
  /** Sealed epoch of each checkpoint taken and not yet superseded by a completed one. */
  private readonly sealedBy = new Map<number, number>();
  /** Highest epoch sealed by a completed checkpoint. */
  completedEpoch = -1;

  /** Starts over from a recovered database: `current` is new, `existing` are its overflow epochs. */
  reset(current: number, existing: readonly number[]): void {
    this.live = [...existing.filter((e) => e < current), current];
    this.rows.clear();
    this.filters.clear();
    this.filters.set(current, new KeyFilter());
    for (const e of this.live) this.rows.set(e, e === current ? 0 : 1);
    this.lookup = undefined;
    this.sealedBy.clear();
    this.completedEpoch = -1;
  }

  /** A restored checkpoint: complete, with its state at `epoch` and below. */
  restored(checkpointId: number, epoch: number): void {
    this.sealedBy.set(checkpointId, epoch);
    if (epoch > this.completedEpoch) this.completedEpoch = epoch;
  }

  get current(): number {
    return this.live[this.live.length - 1] as number;
  }

  get oldest(): number {
    return this.live[0] as number;
  }

  wrote(count: number): void {
    if (count === 0) return;
    const current = this.current;
    const before = this.rows.get(current) ?? 0;
    this.rows.set(current, before + count);
    if (before === 0) this.lookup = undefined;
  }

  /** Ends the current epoch for checkpoint `checkpointId`; returns the sealed epoch. */
  seal(checkpointId: number): number {
    const sealed = this.current;
    this.live.push(sealed + 1);
    this.rows.set(sealed + 1, 0);
    this.filters.set(sealed + 1, new KeyFilter());
    this.sealedBy.set(checkpointId, sealed);
    return sealed;
  }

  sealedEpochOf(checkpointId: number): number | undefined {
    return this.sealedBy.get(checkpointId);
  }

  /** Checkpoint `checkpointId` completed: older ones will not be restored from this database any more. */
  completed(checkpointId: number): boolean {
    const sealed = this.sealedBy.get(checkpointId);
    if (sealed === undefined) return false;
    if (sealed > this.completedEpoch) this.completedEpoch = sealed;
    for (const id of this.sealedBy.keys()) if (id < checkpointId) this.sealedBy.delete(id);
    return true;
  }

  /** Epochs holding rows, newest first: the layers a read looks through before the main area. */
  lookupEpochs(): readonly number[] {
    if (this.lookup === undefined) {
      this.lookup = [];
      for (let i = this.live.length - 1; i >= 0; i--) {
        const e = this.live[i] as number;
        if ((this.rows.get(e) ?? 1) > 0) this.lookup.push(e);
      }
    }
    return this.lookup;
  }

  /** A row of `groupKey` was written into `epoch`. */
  noteKey(epoch: number, groupKey: Uint8Array): void {
    const filter = this.filters.get(epoch);
    if (filter !== undefined) filter.add(hashKey(groupKey), secondHash());
  }

  /** Appends to `out` the epochs (newest first) that may hold `groupKey`: those a read must look in. */
  epochsFor(groupKey: Uint8Array, out: number[]): void {
    const epochs = this.lookupEpochs();
    if (epochs.length === 0) return;
    const h1 = hashKey(groupKey);
    const h2 = secondHash();
    for (const epoch of epochs) {
      const filter = this.filters.get(epoch);
      if (filter === undefined || filter.mayContain(h1, h2)) out.push(epoch);
    }
  }

  /** Live epochs in [from, to] that hold rows, ascending. */
  epochsWithRows(from: number, to: number): number[] {
    return this.live.filter((e) => e >= from && e <= to && (this.rows.get(e) ?? 1) > 0);
  }

  /** Live epochs up to `to` (including empty ones), ascending. */
  epochsUpTo(to: number): number[] {
    return this.live.filter((e) => e <= to);
  }

  hasRows(): boolean {
    return this.lookupEpochs().length > 0;
  }

  /** The oldest epoch, once it may be promoted (sealed and at most `limit`), or undefined. */
  promotable(limit: number): number | undefined {
    const oldest = this.oldest;
    return this.live.length > 1 && oldest <= limit ? oldest : undefined;
  }

  isEmpty(epoch: number): boolean {
    return this.rows.get(epoch) === 0;
  }

  /** The oldest epoch's rows are all in the main area now. */
  promoted(epoch: number): void {
    if (this.live[0] !== epoch || this.live.length < 2) return;
    this.live.shift();
    this.rows.delete(epoch);
    this.filters.delete(epoch);
    this.lookup = undefined;
  }
}
