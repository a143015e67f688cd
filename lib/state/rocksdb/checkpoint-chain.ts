import type { SharedStateFileRef, SharedStateStore } from '../backend.ts';
import type { StateFileKind } from '../snapshot-format/state-file-format.ts';

export interface ChainFile {
  readonly ref: SharedStateFileRef;
  readonly kind: StateFileKind;
  /** Every overflow generation up to this one is contained in the chain up to and including this file. */
  readonly throughGeneration: number;
}

export interface MaterializationLimits {
  readonly changelogRatio: number;
  readonly minChangelogBytes: number;
  readonly maxSegments: number;
}

/** Files from one store may be listed by a checkpoint of another only when both are the same shared area. */
export function sameStore(a: SharedStateStore | undefined, b: SharedStateStore | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  return a === b || (a.location !== undefined && a.location === b.location);
}

/**
 * The files the next checkpoint lists: the last materialisation (or the first segment written from empty state,
 * which holds the same) followed by the changelog segments written since, oldest first. Applied in order they give the state up to
 * `coveredGeneration`; the next segment starts after it.
 */
export class CheckpointChain {
  private files: ChainFile[] = [];
  private store: SharedStateStore | undefined;
  /** A checkpoint wrote these files into `store` (after a restore the store is only assumed). */
  private confirmed = true;
  /** The files hold this backend's whole state; false after restoring several handles or another key-group range. */
  private whole = true;
  coveredGeneration: number;

  constructor(coveredGeneration = -1) {
    this.coveredGeneration = coveredGeneration;
  }

  /** Continues a restored checkpoint's files (single handle, same key-group range). */
  static restored(files: readonly SharedStateFileRef[], store: SharedStateStore | undefined, coveredGeneration: number): CheckpointChain {
    const chain = new CheckpointChain(coveredGeneration);
    chain.files = files.map((ref, i) => ({ ref, kind: i === 0 ? 'full' : 'changes', throughGeneration: coveredGeneration }));
    chain.store = store;
    chain.confirmed = false;
    return chain;
  }

  /** The state came from elsewhere (rescaling, plain snapshots): the next checkpoint writes a full copy. */
  static partial(coveredGeneration: number): CheckpointChain {
    const chain = new CheckpointChain(coveredGeneration);
    chain.whole = false;
    return chain;
  }

  refs(): SharedStateFileRef[] {
    return this.files.map((f) => f.ref);
  }

  /** A checkpoint into `store` can add a segment (rather than write everything). */
  extendsInto(store: SharedStateStore): boolean {
    return this.whole && (this.files.length === 0 || sameStore(this.store, store));
  }

  /** The synchronous phase must prepare a full view: the next checkpoint may not be able to add a segment. */
  mayNeedFull(): boolean {
    return !this.whole || (this.files.length > 0 && !this.confirmed);
  }

  appendChanges(ref: SharedStateFileRef, throughGeneration: number, store: SharedStateStore): void {
    // The first segment of a chain that started from empty state holds every key with state: it is the chain's
    // materialisation (no second full copy of the same state is written in the background).
    this.files.push({ ref, kind: this.files.length === 0 ? 'full' : 'changes', throughGeneration });
    this.store = store;
    this.confirmed = true;
    this.coveredGeneration = throughGeneration;
  }

  /** Nothing changed since the last file: the chain covers more generations without a new file. */
  advance(throughGeneration: number, store: SharedStateStore): void {
    if (this.files.length > 0) this.confirmed = true;
    this.store ??= store;
    this.coveredGeneration = Math.max(this.coveredGeneration, throughGeneration);
  }

  /** A full materialisation replaces the segments it contains. */
  adoptFull(ref: SharedStateFileRef, throughGeneration: number, store: SharedStateStore): void {
    this.files = [{ ref, kind: 'full', throughGeneration }, ...this.files.filter((f) => f.kind === 'changes' && f.throughGeneration > throughGeneration)];
    this.store = store;
    this.confirmed = true;
    this.whole = true;
    this.coveredGeneration = Math.max(this.coveredGeneration, throughGeneration);
  }

  /** Whether the changelog since the last materialisation is long enough to write a new one. */
  dueForMaterialization(limits: MaterializationLimits): boolean {
    let fullBytes = 0;
    let changeBytes = 0;
    let segments = 0;
    for (const f of this.files) {
      if (f.kind === 'full') fullBytes += f.ref.bytes;
      else {
        changeBytes += f.ref.bytes;
        segments++;
      }
    }
    if (segments === 0) return false;
    if (segments >= limits.maxSegments) return true;
    return changeBytes >= limits.minChangelogBytes && changeBytes > limits.changelogRatio * fullBytes;
  }
}
