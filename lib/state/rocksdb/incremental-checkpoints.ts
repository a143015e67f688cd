import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { InternalError, type KeyGroupRange } from '../../core/index.ts';
import type { FileKeyedStateSnapshot, PendingKeyedSnapshot, SharedStateFileRef, SharedStateStore } from '../backend.ts';
import type { StateFileKind } from '../files/state-file-format.ts';
import { CheckpointChain, sameStore, type MaterializationLimits } from './checkpoint-chain.ts';
import type { EpochLog } from './epoch-log.ts';
import type { MergedView } from './merged-view.ts';
import type { RocksDbStateMetrics } from './rocksdb-metrics.ts';
import { writeViewToFile, type TtlCut } from './snapshot-files.ts';
import type { StateDb } from './state-db.ts';
import type { StateRegistry } from './state-registry.ts';

/** What a checkpoint's synchronous phase fixed: everything else is derived from the database later. */
export interface SealedSnapshot {
  readonly checkpointId: number;
  readonly savepoint: boolean;
  readonly sealedEpoch: number;
  readonly ttl: TtlCut;
  /** Resolves once the rows the synchronous phase sealed are in the database, with the recovery marker. */
  readonly flushed: Promise<void>;
}

export interface CheckpointContext {
  /** The open database (waits for it to open). */
  database(): Promise<StateDb>;
  readonly epochs: EpochLog;
  readonly registry: StateRegistry;
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  readonly limits: MaterializationLimits;
  readonly tempDir: string;
  /** Start of every file name: unique per backend instance (scope + random instance id). */
  readonly filePrefix: string;
  readonly metrics: RocksDbStateMetrics;
  isDisposed(): boolean;
}

/**
 * The asynchronous side of the RocksDB backend's checkpoints (design: docs/state.md):
 * - a checkpoint writes one changelog segment with the rows of the epochs sealed since the chain's last file
 *   (none when nothing changed) and lists the chain: last materialisation + segments since;
 * - when the changelog outgrows the policy, a full materialisation of the same point runs in the background and
 *   a later checkpoint adopts it (checkpoint durations stay short whatever the state size);
 * - a savepoint, or a checkpoint whose store cannot hold references to the chain, writes a full file inline;
 * - once a checkpoint is complete, the epochs it covers are promoted into the main area.
 * Completions run one at a time in the order they were started.
 */
export class IncrementalCheckpoints {
  chain: CheckpointChain;
  private base: { ref: SharedStateFileRef; throughEpoch: number; store: SharedStateStore } | undefined;
  private materializing: Promise<void> | undefined;
  private promoting: Promise<void> | undefined;
  private lastCompletion: Promise<unknown> = Promise.resolve();
  private readonly views = new Set<MergedView>();
  private sequence = 0;
  lastBackgroundError: unknown;

  constructor(private readonly ctx: CheckpointContext) {
    this.chain = new CheckpointChain(ctx.epochs.current - 1);
  }

  pending(sealed: SealedSnapshot): PendingKeyedSnapshot {
    let result: Promise<FileKeyedStateSnapshot> | undefined;
    return {
      kind: 'pending',
      complete: (store) => {
        if (result === undefined) {
          const previous = this.lastCompletion;
          result = previous.then(
            () => this.complete(sealed, store),
            () => this.complete(sealed, store),
          );
          this.lastCompletion = result;
        }
        return result;
      },
    };
  }

  /** Checkpoint `checkpointId` is complete: its epochs can move into the main area. */
  completed(checkpointId: number, sdb: StateDb | undefined): void {
    if (!this.ctx.epochs.completed(checkpointId) || sdb === undefined) return;
    const batch = sdb.db.batch();
    sdb.deleteMarkers(batch, checkpointId);
    batch.write();
    this.promote(sdb);
  }

  /** Moves sealed epochs covered by a complete checkpoint and by the chain into the main area, in the background. */
  promote(sdb: StateDb): void {
    if (this.promoting !== undefined) return;
    const epochs = this.ctx.epochs;
    const limit = (): number => Math.min(epochs.completedEpoch, this.chain.coveredEpoch);
    if (epochs.promotable(limit()) === undefined) return;
    this.promoting = (async () => {
      for (let e = epochs.promotable(limit()); e !== undefined && !this.ctx.isDisposed(); e = epochs.promotable(limit())) {
        if (!epochs.isEmpty(e) && !(await sdb.promote(e, () => this.ctx.isDisposed()))) return;
        epochs.promoted(e);
        this.ctx.metrics.promotedEpochs++;
      }
    })()
      .catch((err: unknown) => this.failed(err))
      .finally(() => {
        this.promoting = undefined;
      });
  }

  /** Stops background work and open snapshot views (their files fail rather than end short), then waits for it. */
  async stop(): Promise<void> {
    for (const view of this.views) view.cancel();
    await Promise.allSettled([this.lastCompletion, this.materializing, this.promoting]);
  }

  /** Waits until background materialisation and promotion are idle (tests, benchmarks, orderly shutdown). */
  async idle(): Promise<void> {
    for (;;) {
      const pending = [this.lastCompletion, this.materializing, this.promoting].filter((p) => p !== undefined);
      await Promise.allSettled(pending);
      if (this.materializing === undefined && this.promoting === undefined) return;
    }
  }

  private async complete(sealed: SealedSnapshot, store: SharedStateStore): Promise<FileKeyedStateSnapshot> {
    await sealed.flushed;
    const sdb = await this.ctx.database();
    const epochs = this.ctx.epochs;
    let files: SharedStateFileRef[];
    if (sealed.savepoint) {
      files = [await this.writeFile(sdb.view(epochs.epochsUpTo(sealed.sealedEpoch), true), 'full', sealed, store)];
    } else {
      const chain = this.chain;
      if (sealed.sealedEpoch < chain.coveredEpoch) {
        throw new InternalError(`the asynchronous phase of checkpoint ${sealed.checkpointId} ran after a later checkpoint's`);
      }
      if (chain.extendsInto(store)) {
        const changed = epochs.epochsWithRows(chain.coveredEpoch + 1, sealed.sealedEpoch);
        if (changed.length > 0) chain.appendChanges(await this.writeFile(sdb.view(changed, false), 'changes', sealed, store), sealed.sealedEpoch, store);
        else chain.advance(sealed.sealedEpoch, store);
        const base = this.base;
        if (base !== undefined && sameStore(base.store, store)) {
          chain.adoptFull(base.ref, base.throughEpoch, store);
          this.base = undefined;
        }
      } else {
        const ref = await this.writeFile(sdb.view(epochs.epochsUpTo(sealed.sealedEpoch), true), 'full', sealed, store);
        chain.adoptFull(ref, sealed.sealedEpoch, store);
      }
      files = chain.refs();
      if (this.materializing === undefined && chain.dueForMaterialization(this.ctx.limits)) this.materialize(sdb, sealed, store);
    }
    recordMarkerFiles(sdb, sealed.checkpointId, files);
    this.promote(sdb);
    return {
      kind: 'files',
      checkpointId: sealed.checkpointId,
      maxParallelism: this.ctx.maxParallelism,
      keyGroupRange: { start: this.ctx.keyGroupRange.start, end: this.ctx.keyGroupRange.end },
      files,
    };
  }

  /** Writes a full copy of the state at `sealed` in the background; a later checkpoint adopts it. */
  private materialize(sdb: StateDb, sealed: SealedSnapshot, store: SharedStateStore): void {
    // The view is opened now, before any later checkpoint completes and promotes epochs past this one.
    const view = sdb.view(this.ctx.epochs.epochsUpTo(sealed.sealedEpoch), true);
    this.materializing = this.writeFile(view, 'full', sealed, store)
      .then((ref) => {
        this.base = { ref, throughEpoch: sealed.sealedEpoch, store };
      })
      .catch((err: unknown) => this.failed(err))
      .finally(() => {
        this.materializing = undefined;
      });
  }

  private async writeFile(view: MergedView, kind: StateFileKind, sealed: SealedSnapshot, store: SharedStateStore): Promise<SharedStateFileRef> {
    this.views.add(view);
    const name = `${this.ctx.filePrefix}-${sealed.checkpointId}-${kind}-${this.sequence++}`;
    const local = join(this.ctx.tempDir, name);
    try {
      await mkdir(this.ctx.tempDir, { recursive: true });
      const header = {
        kind,
        checkpointId: sealed.checkpointId,
        maxParallelism: this.ctx.maxParallelism,
        keyGroupRange: this.ctx.keyGroupRange,
        states: this.ctx.registry.dictionary(),
      };
      await writeViewToFile(local, header, view, sealed.ttl);
      const ref = await store.put(name, local);
      const metrics = this.ctx.metrics;
      if (kind === 'full') {
        metrics.fullFiles++;
        metrics.fullBytes += ref.bytes;
      } else {
        metrics.changelogFiles++;
        metrics.changelogBytes += ref.bytes;
      }
      return ref;
    } finally {
      this.views.delete(view);
      view.close();
      await rm(local, { force: true });
    }
  }

  private failed(err: unknown): void {
    this.lastBackgroundError = err;
    this.ctx.metrics.backgroundFailures++;
  }
}

/** The marker of a checkpoint learns its files, so a restore from exactly these files may reuse the database. */
function recordMarkerFiles(sdb: StateDb, checkpointId: number, files: readonly SharedStateFileRef[]): void {
  if (!sdb.db.isOpen) return;
  const marker = sdb.marker(checkpointId);
  if (marker === undefined) return;
  const batch = sdb.db.batch();
  sdb.putMarker(batch, { ...marker, files: files.map((f) => ({ path: f.path, bytes: f.bytes, sha256: f.sha256 })) });
  batch.write();
}
