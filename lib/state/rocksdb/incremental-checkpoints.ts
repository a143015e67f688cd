import { channel } from 'node:diagnostics_channel';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { InternalError, type KeyGroupRange } from '../../core/index.ts';
import type { FileKeyedStateSnapshot, PendingKeyedSnapshot, SharedStateFileRef, SharedStateStore } from '../backend.ts';
import type { StateFileKind } from '../snapshot-format/state-file-format.ts';
import { CheckpointChain, sameStore, type MaterializationLimits } from './checkpoint-chain.ts';
import type { GenerationLog } from './generation-log.ts';
import type { MergedView } from './merged-view.ts';
import type { RocksDbStateMetrics } from './rocksdb-metrics.ts';
import { writeViewToFile, type TtlCut } from './snapshot-files.ts';
import type { StateDb } from './state-db.ts';
import type { StateRegistry } from './state-registry.ts';

/** Diagnostics channel with the timings of the asynchronous phase (benchmarks, tracing); free without subscribers. */
export const CHECKPOINT_TIMINGS_CHANNEL = 'sluice:rocksdb:checkpoint-timings';

/** Messages on CHECKPOINT_TIMINGS_CHANNEL (milliseconds). */
export type CheckpointTiming =
  | {
      /** A state file was written and put into the store (by a completion, or by a background materialisation). */
      readonly event: 'file';
      readonly checkpointId: number;
      readonly kind: StateFileKind;
      readonly background: boolean;
      readonly bytes: number;
      readonly rows: number;
      /** Reading the view and writing the local file. */
      readonly writeMs: number;
      /** `store.put`. */
      readonly putMs: number;
      /** Closing the view and deleting the local file. */
      readonly cleanupMs: number;
    }
  | {
      /** A completion (the asynchronous phase) finished. */
      readonly event: 'completed';
      readonly checkpointId: number;
      /** Waiting for the synchronous phase's rows to be written into the sealed generation. */
      readonly flushWaitMs: number;
      readonly totalMs: number;
    };

const timings = channel(CHECKPOINT_TIMINGS_CHANNEL);

/** What a checkpoint's synchronous phase fixed: everything else is derived from the database later. */
export interface SealedSnapshot {
  readonly checkpointId: number;
  readonly savepoint: boolean;
  readonly sealedGeneration: number;
  readonly ttl: TtlCut;
  /** Resolves once the rows the synchronous phase sealed are in the database, with the recovery marker. */
  readonly flushed: Promise<void>;
}

export interface CheckpointContext {
  /** The open database (waits for it to open). */
  database(): Promise<StateDb>;
  readonly generations: GenerationLog;
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
 * - a checkpoint writes one changelog segment with the rows of the generations sealed since the chain's last file
 *   (none when nothing changed) and lists the chain: last materialisation + segments since;
 * - when the changelog outgrows the policy, a full materialisation of the same point runs in the background and
 *   a later checkpoint adopts it (checkpoint durations stay short whatever the state size);
 * - a savepoint, or a checkpoint whose store cannot hold references to the chain, writes a full file inline;
 * - once a checkpoint is complete, the generations it covers are promoted into the main area.
 * Completions run one at a time in the order they were started.
 */
export class IncrementalCheckpoints {
  chain: CheckpointChain;
  private base: { ref: SharedStateFileRef; throughGeneration: number; store: SharedStateStore } | undefined;
  private materializing: Promise<void> | undefined;
  private promoting: Promise<void> | undefined;
  private lastCompletion: Promise<unknown> = Promise.resolve();
  private readonly views = new Set<MergedView>();
  private readonly pacer = new BackgroundPacer();
  private sequence = 0;
  lastBackgroundError: unknown;

  constructor(private readonly ctx: CheckpointContext) {
    this.chain = new CheckpointChain(ctx.generations.current - 1);
  }

  pending(sealed: SealedSnapshot): PendingKeyedSnapshot {
    let result: Promise<FileKeyedStateSnapshot> | undefined;
    return {
      kind: 'pending',
      complete: (store) => {
        if (result === undefined) {
          const previous = this.lastCompletion;
          this.pacer.enter();
          result = previous.then(
            () => this.complete(sealed, store),
            () => this.complete(sealed, store),
          );
          this.lastCompletion = result;
          const leave = (): void => this.pacer.leave();
          result.then(leave, leave);
        }
        return result;
      },
    };
  }

  /** Checkpoint `checkpointId` is complete: its generations can move into the main area. */
  completed(checkpointId: number, sdb: StateDb | undefined): void {
    if (!this.ctx.generations.completed(checkpointId) || sdb === undefined) return;
    const batch = sdb.db.batch();
    sdb.deleteMarkers(batch, checkpointId);
    batch.write();
    this.promote(sdb);
  }

  /** Moves sealed generations covered by a complete checkpoint and by the chain into the main area, in the background. */
  promote(sdb: StateDb): void {
    if (this.promoting !== undefined) return;
    const generations = this.ctx.generations;
    const limit = (): number => Math.min(generations.completedGeneration, this.chain.coveredGeneration);
    if (generations.promotable(limit()) === undefined) return;
    this.promoting = (async () => {
      for (let e = generations.promotable(limit()); e !== undefined && !this.ctx.isDisposed(); e = generations.promotable(limit())) {
        if (!generations.isEmpty(e) && !(await sdb.promote(e, () => this.ctx.isDisposed(), this.pacer.pace))) return;
        generations.promoted(e);
        this.ctx.metrics.promotedGenerations++;
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
    this.pacer.release();
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
    const started = performance.now();
    await sealed.flushed;
    const flushWaitMs = performance.now() - started;
    const sdb = await this.ctx.database();
    const generations = this.ctx.generations;
    let files: SharedStateFileRef[];
    if (sealed.savepoint) {
      files = [await this.writeFile(sdb.view(generations.generationsUpTo(sealed.sealedGeneration), true), 'full', sealed, store)];
    } else {
      const chain = this.chain;
      if (sealed.sealedGeneration < chain.coveredGeneration) {
        throw new InternalError(`the asynchronous phase of checkpoint ${sealed.checkpointId} ran after a later checkpoint's`);
      }
      if (chain.extendsInto(store)) {
        const changed = generations.generationsWithRows(chain.coveredGeneration + 1, sealed.sealedGeneration);
        if (changed.length > 0) chain.appendChanges(await this.writeFile(sdb.view(changed, false), 'changes', sealed, store), sealed.sealedGeneration, store);
        else chain.advance(sealed.sealedGeneration, store);
        const base = this.base;
        if (base !== undefined && sameStore(base.store, store)) {
          chain.adoptFull(base.ref, base.throughGeneration, store);
          this.base = undefined;
        }
      } else {
        const ref = await this.writeFile(sdb.view(generations.generationsUpTo(sealed.sealedGeneration), true), 'full', sealed, store);
        chain.adoptFull(ref, sealed.sealedGeneration, store);
      }
      files = chain.refs();
      if (this.materializing === undefined && chain.dueForMaterialization(this.ctx.limits)) this.materialize(sdb, sealed, store);
    }
    recordMarkerFiles(sdb, sealed.checkpointId, files);
    this.promote(sdb);
    if (timings.hasSubscribers) {
      const timing: CheckpointTiming = { event: 'completed', checkpointId: sealed.checkpointId, flushWaitMs, totalMs: performance.now() - started };
      timings.publish(timing);
    }
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
    // The view is opened now, before any later checkpoint completes and promotes generations past this one.
    const view = sdb.view(this.ctx.generations.generationsUpTo(sealed.sealedGeneration), true);
    this.materializing = this.writeFile(view, 'full', sealed, store, true)
      .then((ref) => {
        this.base = { ref, throughGeneration: sealed.sealedGeneration, store };
      })
      .catch((err: unknown) => this.failed(err))
      .finally(() => {
        this.materializing = undefined;
      });
  }

  private async writeFile(view: MergedView, kind: StateFileKind, sealed: SealedSnapshot, store: SharedStateStore, background = false): Promise<SharedStateFileRef> {
    this.views.add(view);
    const name = `${this.ctx.filePrefix}-${sealed.checkpointId}-${kind}-${this.sequence++}`;
    const local = join(this.ctx.tempDir, name);
    const started = performance.now();
    let written: { bytes: number; rows: number } | undefined;
    let wroteAt = 0;
    let putAt = 0;
    try {
      await mkdir(this.ctx.tempDir, { recursive: true });
      const header = {
        kind,
        checkpointId: sealed.checkpointId,
        maxParallelism: this.ctx.maxParallelism,
        keyGroupRange: this.ctx.keyGroupRange,
        states: this.ctx.registry.dictionary(),
      };
      // No fsync of the local file: the store's put makes the stored file durable, the local one is transient.
      written = await writeViewToFile(local, header, view, sealed.ttl, { sync: false, pace: background ? this.pacer.pace : undefined });
      wroteAt = performance.now();
      const ref = await store.put(name, local);
      putAt = performance.now();
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
      // The store may have taken the file over already; this removes it when it did not (or the put failed).
      await rm(local, { force: true });
      if (putAt > 0 && written !== undefined && timings.hasSubscribers) {
        const timing: CheckpointTiming = {
          event: 'file',
          checkpointId: sealed.checkpointId,
          kind,
          background,
          bytes: written.bytes,
          rows: written.rows,
          writeMs: wroteAt - started,
          putMs: putAt - wroteAt,
          cleanupMs: performance.now() - putAt,
        };
        timings.publish(timing);
      }
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

/** Longest a background step waits for running completions before it runs one more slice anyway (no starvation). */
const MAX_BACKGROUND_WAIT_MS = 500;

/**
 * Background work (materialisation, promotion) steps aside while checkpoints complete: its slices share the
 * thread and the disk with the completion, whose duration the next checkpoint waits for. At each yield point it
 * waits until no completion runs, or at most MAX_BACKGROUND_WAIT_MS, then runs one more slice.
 */
class BackgroundPacer {
  private active = 0;
  private waiters: (() => void)[] = [];

  enter(): void {
    this.active++;
  }

  leave(): void {
    if (--this.active === 0) this.release();
  }

  /** Lets every waiting slice run now. */
  release(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  readonly pace = async (): Promise<void> => {
    await yieldToEventLoop();
    if (this.active === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, MAX_BACKGROUND_WAIT_MS);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  };
}
