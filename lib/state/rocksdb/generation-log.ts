import { hashKey, KeyFilter, secondHash } from './key-filter.ts';

/**
 * Bookkeeping of the overflow generations (see docs/state.md): rows leaving the cache go to the current generation; a
 * checkpoint's synchronous phase writes the dirty cache into it and seals it (the next generation starts); sealed
 * generations that a complete checkpoint covers are promoted into the main area in the background.
 */
export class GenerationLog {
  /** Live generations, ascending; the last is the current one. */
  private live: number[] = [0];
  /** Rows written per live generation (generations found in a recovered database count 1: their size is unknown). */
  private readonly rows = new Map<number, number>([[0, 0]]);
  private lookup: number[] | undefined;
  /** Keys written per live generation; none for generations found in a recovered database (they may hold any key). */
  private readonly filters = new Map<number, KeyFilter>([[0, new KeyFilter()]]);
  /** Sealed generation of each checkpoint taken and not yet superseded by a completed one. */
  private readonly sealedBy = new Map<number, number>();
  /** Highest generation sealed by a completed checkpoint. */
  completedGeneration = -1;

  /** Starts over from a recovered database: `current` is new, `existing` are its overflow generations. */
  reset(current: number, existing: readonly number[]): void {
    this.live = [...existing.filter((e) => e < current), current];
    this.rows.clear();
    this.filters.clear();
    this.filters.set(current, new KeyFilter());
    for (const e of this.live) this.rows.set(e, e === current ? 0 : 1);
    this.lookup = undefined;
    this.sealedBy.clear();
    this.completedGeneration = -1;
  }

  /** A restored checkpoint: complete, with its state at `generation` and below. */
  restored(checkpointId: number, generation: number): void {
    this.sealedBy.set(checkpointId, generation);
    if (generation > this.completedGeneration) this.completedGeneration = generation;
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

  /** Ends the current generation for checkpoint `checkpointId`; returns the sealed generation. */
  seal(checkpointId: number): number {
    const sealed = this.current;
    this.live.push(sealed + 1);
    this.rows.set(sealed + 1, 0);
    this.filters.set(sealed + 1, new KeyFilter());
    this.sealedBy.set(checkpointId, sealed);
    return sealed;
  }

  sealedGenerationOf(checkpointId: number): number | undefined {
    return this.sealedBy.get(checkpointId);
  }

  /** Checkpoint `checkpointId` completed: older ones will not be restored from this database any more. */
  completed(checkpointId: number): boolean {
    const sealed = this.sealedBy.get(checkpointId);
    if (sealed === undefined) return false;
    if (sealed > this.completedGeneration) this.completedGeneration = sealed;
    for (const id of this.sealedBy.keys()) if (id < checkpointId) this.sealedBy.delete(id);
    return true;
  }

  /** Generations holding rows, newest first: the layers a read looks through before the main area. */
  lookupGenerations(): readonly number[] {
    if (this.lookup === undefined) {
      this.lookup = [];
      for (let i = this.live.length - 1; i >= 0; i--) {
        const e = this.live[i] as number;
        if ((this.rows.get(e) ?? 1) > 0) this.lookup.push(e);
      }
    }
    return this.lookup;
  }

  /** A row of `groupKey` was written into `generation`. */
  noteKey(generation: number, groupKey: Uint8Array): void {
    const filter = this.filters.get(generation);
    if (filter !== undefined) filter.add(hashKey(groupKey), secondHash());
  }

  /** Appends to `out` the generations (newest first) that may hold `groupKey`: those a read must look in. */
  generationsFor(groupKey: Uint8Array, out: number[]): void {
    const generations = this.lookupGenerations();
    if (generations.length === 0) return;
    const h1 = hashKey(groupKey);
    const h2 = secondHash();
    for (const generation of generations) {
      const filter = this.filters.get(generation);
      if (filter === undefined || filter.mayContain(h1, h2)) out.push(generation);
    }
  }

  /** Live generations in [from, to] that hold rows, ascending. */
  generationsWithRows(from: number, to: number): number[] {
    return this.live.filter((e) => e >= from && e <= to && (this.rows.get(e) ?? 1) > 0);
  }

  /** Live generations up to `to` (including empty ones), ascending. */
  generationsUpTo(to: number): number[] {
    return this.live.filter((e) => e <= to);
  }

  hasRows(): boolean {
    return this.lookupGenerations().length > 0;
  }

  /** The oldest generation, once it may be promoted (sealed and at most `limit`), or undefined. */
  promotable(limit: number): number | undefined {
    const oldest = this.oldest;
    return this.live.length > 1 && oldest <= limit ? oldest : undefined;
  }

  isEmpty(generation: number): boolean {
    return this.rows.get(generation) === 0;
  }

  /** The oldest generation's rows are all in the main area now. */
  promoted(generation: number): void {
    if (this.live[0] !== generation || this.live.length < 2) return;
    this.live.shift();
    this.rows.delete(generation);
    this.filters.delete(generation);
    this.lookup = undefined;
  }
}
