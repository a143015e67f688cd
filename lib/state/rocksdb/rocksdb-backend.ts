import { InternalError, keyGroupOf, type Key, type KeyGroupRange } from '../../core/index.ts';
import {
  checkedKeyGroupRange,
  isFileKeyedStateSnapshot,
  type FileKeyedStateSnapshot,
  type KeyedStateBackend,
  type KeyedStateBackendOptions,
  type KeyedStateHandle,
  type PendingKeyedSnapshot,
  type SharedStateStore,
} from '../backend.ts';
import type {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  StateDescriptor,
  ValueStateDescriptor,
} from '../descriptors.ts';
import { checkMaxParallelism } from '../snapshot-format/handle-files.ts';
import type {
  InternalAggregatingState,
  InternalListState,
  InternalMapState,
  InternalReducingState,
  InternalValueState,
  Namespace,
} from '../keyed-state.ts';
import {
  ttlAggregatingState,
  ttlListState,
  ttlMapState,
  ttlReducingState,
  ttlValueState,
  type TtlPolicy,
  type TtlValue,
} from '../ttl.ts';
import { RocksDb, type RocksDbOpenOptions } from './binding.ts';
import {
  CachedAggregatingState,
  CachedListState,
  CachedMapState,
  CachedReducingState,
  CachedValueState,
} from './cached-handles.ts';
import { CheckpointChain } from './checkpoint-chain.ts';
import { GenerationLog } from './generation-log.ts';
import { IncrementalCheckpoints } from './incremental-checkpoints.ts';
import { LocalStateDirs, scopeName, type RocksDbScope } from './local-dirs.ts';
import { findRecoverableDb, removeUnlessOpen } from './local-recovery.ts';
import { DbRestorer } from './restore-into-db.ts';
import type { Row } from './row.ts';
import { RowStore } from './row-store.ts';
import { SealBatch } from './seal-batch.ts';
import { encodeLiveRow, slotToLive } from './row-forms.ts';
import { emptyMetrics, type RocksDbStateMetrics } from './rocksdb-metrics.ts';
import { compileRocksDbStateOptions, type CompiledRocksDbStateOptions, type RocksDbStateOptions } from './rocksdb-options.ts';
import { StateDb } from './state-db.ts';
import { StateRegistry } from './state-registry.ts';
import { RocksDbTimerService, type TimerRowAccess } from './rocksdb-timer-service.ts';
import { timerStateName, type TimerDomain } from '../timer-state.ts';

export interface RocksDbKeyedStateBackendOptions extends KeyedStateBackendOptions {
  /** Backend settings (compiled once by the composition root; raw options are compiled here). */
  readonly rocksdb?: CompiledRocksDbStateOptions | RocksDbStateOptions;
  /** The operator subtask served: names the local directory. Without it, a unique directory (no local recovery). */
  readonly scope?: RocksDbScope;
}

/**
 * Keyed state in an embedded RocksDB database behind a bounded write-behind cache (design: docs/state.md).
 *
 * - All state of one key is one cached Row and one RocksDB value, keyed keyGroup | key, so one multi-get reads
 *   the misses of a whole input batch (`prefetch`) and a key-group range is one scan.
 * - Changed rows are written on eviction (to the current overflow generation) and at every checkpoint's synchronous
 *   phase, which seals the generation together with a recovery marker; files are written in the asynchronous phase
 *   (IncrementalCheckpoints): changelog segments plus periodic materialisations.
 * - Access is synchronous like the memory backend's: a key that was not prefetched is read with one synchronous
 *   multi-get (counted in `metrics.syncReads`), never guessed. The cache, reads and evictions are RowStore's.
 * - The operator's timers are rows' state too (RocksDbTimerService, created with the backend).
 *
 * Values follow the memory backend's rules: treat them as immutable once in state (a value may be written to
 * RocksDB and read back as a copy at any eviction).
 */
export class RocksDbKeyedStateBackend implements KeyedStateBackend, TimerRowAccess {
  readonly keyGroupRange: KeyGroupRange;
  readonly maxParallelism: number;
  readonly options: CompiledRocksDbStateOptions;

  private readonly now: () => number;
  private readonly dirs: LocalStateDirs;
  private dbDir: string;
  private readonly openOptions: RocksDbOpenOptions;
  private sdb: StateDb | undefined;
  private openError: unknown;
  private readonly ready: Promise<StateDb>;
  /** Writes made before the database finished opening, applied in order when it does. */
  private readonly beforeOpen: ((sdb: StateDb) => void)[] = [];
  private readonly rows: RowStore;
  private readonly registry: StateRegistry;
  private readonly generations = new GenerationLog();
  private readonly checkpoints: IncrementalCheckpoints;
  private fresh = true;
  private localIds = -1;
  private readonly unscoped: boolean;
  private candidatesReleased = false;
  /** Deletion of earlier instances' databases (in the background; dispose waits for it). */
  private releasing: Promise<void> = Promise.resolve();
  private rejectedCandidates: string[] = [];
  private disposed = false;
  private disposing: Promise<void> | undefined;
  private readonly counters = emptyMetrics();
  /** The last checkpoint's SealBatch flush (each waits for the one before). */
  private flushing: Promise<void> = Promise.resolve();
  /** Timers of the operator, kept in this backend's rows (see RocksDbTimerService). */
  private readonly timers: RocksDbTimerService;
  private readonly timerIds: [number | undefined, number | undefined] = [undefined, undefined];

  constructor(options: RocksDbKeyedStateBackendOptions) {
    const keyGroupRange = checkedKeyGroupRange(options);
    const maxParallelism = options.maxParallelism;
    this.keyGroupRange = keyGroupRange;
    this.maxParallelism = maxParallelism;
    this.now = options.now;
    const raw = options.rocksdb ?? {};
    this.options = isCompiled(raw) ? raw : compileRocksDbStateOptions(raw);
    this.registry = new StateRegistry(this.now);
    this.openOptions = {
      blockCacheBytes: this.options.blockCacheBytes,
      writeBufferBytes: this.options.writeBufferBytes,
      compression: this.options.compression,
    };
    this.dirs = new LocalStateDirs(this.options.stateDir, options.scope);
    this.unscoped = options.scope === undefined;
    this.dbDir = this.dirs.newDatabaseDir();
    const prefix = `ks-${options.scope === undefined ? 'unscoped' : scopeName(options.scope)}-${this.dirs.instanceId}`;
    this.checkpoints = new IncrementalCheckpoints({
      database: () => this.database(),
      generations: this.generations,
      registry: this.registry,
      keyGroupRange: this.keyGroupRange,
      maxParallelism,
      limits: this.options,
      tempDir: this.dirs.temp,
      filePrefix: prefix,
      metrics: this.counters,
      isDisposed: () => this.disposed,
    });
    this.rows = new RowStore({
      keyGroupRange: this.keyGroupRange,
      maxParallelism,
      keyGroupOf: options.keyGroupOf ?? keyGroupOf,
      cacheMaxKeys: this.options.cacheMaxKeys,
      registry: this.registry,
      generations: this.generations,
      counters: this.counters,
      db: () => this.sdb,
      source: () => this.dbDir,
      beforeAccess: () => {
        this.checkUsable();
        this.startedProcessing();
      },
      isDisposed: () => this.disposed,
    });
    this.timers = new RocksDbTimerService(this);
    this.ready = RocksDb.open(this.dbDir, this.openOptions).then(
      (db) => this.opened(db),
      (err: unknown) => {
        this.openError = err;
        throw err;
      },
    );
    // Failures surface on the next use; the promise must not count as unhandled meanwhile.
    this.ready.catch(() => undefined);
  }

  // ---- current key -------------------------------------------------------------------------------------------

  setCurrentKey(key: Key): void {
    this.rows.setCurrentKey(key);
  }

  getCurrentKey(): Key {
    return this.rows.currentRow().key;
  }

  getCurrentKeyGroup(): number {
    return this.rows.currentRow().keyGroup;
  }

  /** See KeyedStateBackend.prefetch: one multi-get for every key of `keys` that is not cached. */
  prefetch(keys: readonly Key[]): void | Promise<void> {
    return this.rows.prefetch(keys);
  }

  // ---- timers ------------------------------------------------------------------------------------------------

  /** The operator's timer service: its timers live in this backend (one service per backend). */
  timerService(): RocksDbTimerService {
    return this.timers;
  }

  /** Resolves once the database is open: timers and checkpoints may then use it synchronously. */
  async open(): Promise<void> {
    await this.ready;
  }

  openDb(): StateDb | undefined {
    return this.sdb;
  }

  rowFor(key: Key): Row {
    return this.rows.rowFor(key);
  }

  cacheRows(keys: readonly Key[]): void {
    this.rows.cacheRows(keys);
  }

  timerStateId(domain: TimerDomain): number {
    const slot = domain === 'event' ? 0 : 1;
    let id = this.timerIds[slot];
    if (id === undefined) {
      id = this.register({ name: timerStateName(domain), kind: 'value', ttl: undefined }, (stateId) => stateId);
      this.timerIds[slot] = id;
    }
    return id;
  }

  // ---- state handles -----------------------------------------------------------------------------------------

  getValueState<T>(descriptor: ValueStateDescriptor<T>): InternalValueState<T> {
    return this.register(descriptor, (id, ttl) =>
      ttl === undefined ? new CachedValueState<T>(this.rows, id) : ttlValueState(new CachedValueState<TtlValue<T>>(this.rows, id), ttl),
    );
  }

  getListState<T>(descriptor: ListStateDescriptor<T>): InternalListState<T> {
    return this.register(descriptor, (id, ttl) =>
      ttl === undefined ? new CachedListState<T>(this.rows, id) : ttlListState(new CachedListState<TtlValue<T>>(this.rows, id), ttl),
    );
  }

  getMapState<UK extends Key, V>(descriptor: MapStateDescriptor<UK, V>): InternalMapState<UK, V> {
    return this.register(descriptor, (id, ttl) =>
      ttl === undefined ? new CachedMapState<UK, V>(this.rows, id) : ttlMapState(new CachedMapState<UK, TtlValue<V>>(this.rows, id), ttl),
    );
  }

  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): InternalReducingState<T> {
    return this.register(descriptor, (id, ttl) =>
      ttl === undefined
        ? new CachedReducingState<T>(this.rows, id, descriptor.reduce)
        : ttlReducingState(new CachedValueState<TtlValue<T>>(this.rows, id), descriptor.reduce, ttl),
    );
  }

  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): InternalAggregatingState<IN, ACC, OUT> {
    return this.register(descriptor, (id, ttl) =>
      ttl === undefined
        ? new CachedAggregatingState<IN, ACC, OUT>(this.rows, id, descriptor.aggregate)
        : ttlAggregatingState(new CachedValueState<TtlValue<ACC>>(this.rows, id), descriptor.aggregate, ttl),
    );
  }

  // ---- queries -----------------------------------------------------------------------------------------------

  /** Scans the database (every key with state), so it costs a full read: for rare, whole-state operations. */
  keys(stateName: string, namespace: Namespace): Key[] {
    const info = this.registry.get(stateName);
    return info === undefined ? [] : this.rows.keysWith(info.id, namespace);
  }

  entryCount(): number {
    return this.rows.entryCount();
  }

  metrics(): RocksDbStateMetrics {
    return { ...this.counters, cachedKeys: this.rows.cache.size };
  }

  /** The error of the last failed background materialisation or promotion, if any (they are retried). */
  get lastBackgroundError(): unknown {
    return this.checkpoints.lastBackgroundError;
  }

  /** Resolves once the database is open and background materialisation and promotion have nothing left to do. */
  async whenIdle(): Promise<void> {
    await this.ready;
    await this.checkpoints.idle();
    await this.releasing;
  }

  /** The database directory in use (tests, tooling). */
  get directory(): string {
    return this.dbDir;
  }

  // ---- checkpoints -------------------------------------------------------------------------------------------

  /**
   * The synchronous phase: writes every dirty cached row into the current generation together with the recovery marker
   * of `checkpointId` (one atomic batch) and seals the generation. Returns the asynchronous rest, which writes the
   * files (see IncrementalCheckpoints). Without an id (tests), a local negative id is used.
   */
  snapshot(checkpointId?: number, savepoint = false): PendingKeyedSnapshot {
    this.checkUsable();
    this.startedProcessing();
    const id = checkpointId ?? this.localIds--;
    const generation = this.generations.current;
    // Copy-on-write: the dirty rows are only marked here; SealBatch writes them (as they are now) afterwards.
    const seal = new SealBatch(
      generation,
      (row) => encodeLiveRow(row, this.registry),
      (sdb, batch, groupKey, bytes) => this.rows.putOverflow(sdb, batch, generation, groupKey, bytes),
    );
    this.rows.sealDirtyRows(seal);
    const timerCounts = this.timers.sealPoint(id);
    if (this.sdb !== undefined) this.timers.flushIndex(this.sdb);
    const marker = {
      checkpointId: id,
      sealedGeneration: generation,
      keyGroupStart: this.keyGroupRange.start,
      keyGroupEnd: this.keyGroupRange.end,
      maxParallelism: this.maxParallelism,
      entryCount: this.rows.dbEntries,
      timers: timerCounts,
    };
    this.generations.wrote(seal.size);
    this.generations.seal(id);
    // Seals are written in order: a marker may only claim a database that holds every earlier seal too.
    const flushed = this.flushing.then(async () => {
      const sdb = await this.database();
      // Index entries of timers registered before the database opened; their rows are in this seal.
      this.timers.flushIndex(sdb);
      await seal.flush(sdb, marker, () => this.disposed);
    });
    this.flushing = flushed;
    flushed.catch(() => undefined);
    return this.checkpoints.pending({
      checkpointId: id,
      savepoint,
      sealedGeneration: generation,
      ttl: { states: this.registry.ttlStates(), now: this.now() },
      flushed,
    });
  }

  notifyCheckpointComplete(checkpointId: number): void {
    if (this.disposed) return;
    this.checkpoints.completed(checkpointId, this.sdb);
    if (this.sdb !== undefined) this.timers.completed(this.sdb, checkpointId);
  }

  /**
   * Loads the key groups of `snapshots` in this backend's range. A single file handle of exactly this range is
   * first looked for in the local directory (local recovery: no download); otherwise files are read through
   * `store` into the main area, and plain snapshots are converted. Must come before any state access.
   */
  async restore(snapshots: readonly KeyedStateHandle[], store?: SharedStateStore): Promise<void> {
    this.checkUsable();
    for (const snapshot of snapshots) checkMaxParallelism(snapshot.maxParallelism, this.maxParallelism);
    if (!this.fresh || this.rows.cache.size > 0 || this.generations.hasRows()) {
      throw new InternalError('keyed state can only be restored into a backend that has not been used yet');
    }
    if (snapshots.length === 0) return;
    await this.ready;
    const only = snapshots.length === 1 ? snapshots[0] : undefined;
    const exact = only !== undefined && isFileKeyedStateSnapshot(only) && this.isOwnRange(only.keyGroupRange) ? only : undefined;
    if (exact !== undefined && this.options.localRecovery && (await this.recoverLocally(exact, store))) return;
    await this.restoreFromHandles(snapshots, store, exact);
  }

  async dispose(): Promise<void> {
    if (this.disposing !== undefined) return this.disposing;
    this.disposed = true;
    this.rows.clear();
    this.disposing = (async () => {
      // Nothing may write to the database once it closes: seals, completions and background work stop first.
      await this.flushing.catch(() => undefined);
      await this.checkpoints.stop();
      await this.releasing;
      const sdb = await this.ready.catch(() => undefined);
      this.sdb = undefined;
      if (sdb !== undefined) await sdb.close().catch(() => undefined);
      // Without a scope nobody can find the database again; otherwise it stays for local recovery unless disabled.
      const remove = [this.dirs.temp, ...this.rejectedCandidates];
      if (this.unscoped) remove.push(this.dirs.base);
      else if (!this.options.localRecovery) remove.push(this.dbDir);
      await LocalStateDirs.remove(remove);
    })();
    return this.disposing;
  }

  // ---- internals ---------------------------------------------------------------------------------------------

  private opened(db: RocksDb): StateDb {
    const sdb = new StateDb(db, db.location);
    for (const write of this.beforeOpen.splice(0)) write(sdb);
    this.sdb = sdb;
    return sdb;
  }

  /** The database in use once open (local recovery may have replaced the one opened first). */
  private async database(): Promise<StateDb> {
    await this.ready;
    if (this.sdb === undefined) throw new InternalError('the RocksDB keyed state backend was disposed');
    return this.sdb;
  }

  private withDb(write: (sdb: StateDb) => void): void {
    if (this.sdb !== undefined) write(this.sdb);
    else this.beforeOpen.push(write);
  }

  private checkUsable(): void {
    if (this.disposed) throw new InternalError('the RocksDB keyed state backend was used after dispose()');
    if (this.openError !== undefined) {
      throw new InternalError(`the RocksDB keyed state database in ${this.dbDir} could not be opened`, this.openError);
    }
  }

  private isOwnRange(range: KeyGroupRange): boolean {
    return range.start === this.keyGroupRange.start && range.end === this.keyGroupRange.end;
  }

  private register<H>(
    descriptor: Pick<StateDescriptor, 'name' | 'kind' | 'ttl'>,
    create: (id: number, ttl: TtlPolicy | undefined) => H,
  ): H {
    const { info, isNewId } = this.registry.register(descriptor);
    if (info.kind !== undefined) return info.handle as H;
    if (isNewId) this.withDb((sdb) => this.persistName(sdb, info.id, info.name));
    for (const row of this.rows.cache.values()) {
      const slot = row.slot(info.id);
      if (slot !== undefined) slotToLive(slot, info.name, descriptor.kind);
    }
    this.registry.setKind(info, descriptor, undefined);
    const handle = create(info.id, info.ttl);
    info.handle = handle;
    return handle;
  }

  private persistName(sdb: StateDb, id: number, name: string): void {
    const batch = sdb.db.batch();
    sdb.putStateName(batch, id, name);
    batch.write();
  }

  /** Processing began without a restore: databases of earlier instances will not be needed. */
  private startedProcessing(): void {
    this.fresh = false;
    if (this.candidatesReleased) return;
    this.releaseOtherCandidates(undefined);
  }

  private async recoverLocally(handle: FileKeyedStateSnapshot, store: SharedStateStore | undefined): Promise<boolean> {
    const { found, rejected } = await findRecoverableDb(this.dirs.candidates, handle, this.keyGroupRange, this.registry, this.openOptions);
    this.rejectedCandidates = rejected;
    if (found === undefined) return false;
    const fresh = this.sdb as StateDb;
    const freshDir = this.dbDir;
    const { sdb, dir, marker } = found;
    for (const [id, name] of sdb.stateNames()) this.registry.load(id, name);
    for (const [id, name] of this.registry.dictionary()) this.persistName(sdb, id, name);
    sdb.deleteOverflowFrom(marker.sealedGeneration + 1);
    const batch = sdb.db.batch();
    sdb.deleteMarkers(batch, undefined, handle.checkpointId);
    batch.write();
    this.sdb = sdb;
    this.dbDir = dir;
    this.generations.reset(marker.sealedGeneration + 1, sdb.overflowGenerations());
    this.generations.restored(handle.checkpointId, marker.sealedGeneration);
    this.rows.hasStored = true;
    this.rows.dbEntries = marker.entryCount;
    this.timers.restored(marker.timers);
    this.checkpoints.chain = CheckpointChain.restored(handle.files, store, marker.sealedGeneration);
    this.counters.localRecoveries++;
    this.releaseOtherCandidates(dir);
    await fresh.close();
    await LocalStateDirs.remove([freshDir]);
    this.checkpoints.promote(sdb);
    return true;
  }

  private async restoreFromHandles(
    snapshots: readonly KeyedStateHandle[],
    store: SharedStateStore | undefined,
    exact: FileKeyedStateSnapshot | undefined,
  ): Promise<void> {
    const sdb = this.sdb as StateDb;
    const restorer = new DbRestorer(sdb, this.registry, this.keyGroupRange, this.maxParallelism, this.dirs.temp);
    for (const snapshot of snapshots) {
      if (isFileKeyedStateSnapshot(snapshot)) await restorer.applyFiles(snapshot, store);
      else restorer.applyPlain(snapshot);
    }
    this.rows.dbEntries += restorer.entries;
    this.timers.restored(restorer.timerCounts);
    this.rows.hasStored = true;
    this.counters.fileRestores++;
    const throughGeneration = this.generations.current - 1;
    if (exact !== undefined) {
      // The database now holds exactly this checkpoint: mark it, so a restart before the next one needs no download.
      const batch = sdb.db.batch();
      sdb.putMarker(batch, {
        checkpointId: exact.checkpointId,
        sealedGeneration: throughGeneration,
        keyGroupStart: this.keyGroupRange.start,
        keyGroupEnd: this.keyGroupRange.end,
        maxParallelism: this.maxParallelism,
        entryCount: this.rows.dbEntries,
        timers: restorer.timerCounts,
        files: exact.files,
      });
      batch.write();
      this.generations.restored(exact.checkpointId, throughGeneration);
      this.checkpoints.chain = CheckpointChain.restored(exact.files, store, throughGeneration);
    } else {
      this.checkpoints.chain = CheckpointChain.partial(throughGeneration);
    }
    this.releaseOtherCandidates(undefined);
  }

  private releaseOtherCandidates(kept: string | undefined): void {
    this.candidatesReleased = true;
    const candidates = this.dirs.candidates.filter((c) => c !== kept);
    const temps = this.dirs.staleTempDirs();
    this.releasing = Promise.all([removeUnlessOpen(candidates, this.openOptions), LocalStateDirs.remove(temps)]).then(
      () => undefined,
      () => undefined,
    );
  }
}

function isCompiled(options: CompiledRocksDbStateOptions | RocksDbStateOptions): options is CompiledRocksDbStateOptions {
  return Object.isFrozen(options) && typeof (options as CompiledRocksDbStateOptions).changelogRatio === 'number';
}
