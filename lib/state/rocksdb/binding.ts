import { createRequire } from 'node:module';

/*
 * The only module that loads the native binding (@nxtedition/rocksdb 12, RocksDB 9.7). It exposes the
 * synchronous calls the hot path needs (multi-get, write batch, iterator chunks) behind a small typed surface;
 * everything else in lib/state/rocksdb depends on `RocksDb`, not on the package. The package's public API is
 * asynchronous (abstract-level); its `_…Sync` methods are the binding's documented "nxt" extensions.
 */

interface NativeBatch {
  _put(key: Uint8Array, value: Uint8Array, options: object): void;
  _del(key: Uint8Array, options: object): void;
  _writeSync(options: object): void;
  _closeSync(): void;
  readonly length: number;
}

interface NativeIterator {
  _nextvSync(size: number, options: object): { rows: (Buffer | undefined)[]; finished: boolean };
  _closeSync(): void;
}

interface NativeDb {
  readonly status: string;
  open(options: object): Promise<void>;
  close(): Promise<void>;
  batch(): NativeBatch;
  iterator(options: object): NativeIterator;
  _getManySync(keys: readonly Uint8Array[], options: object): (Buffer | undefined | null)[];
  _clear(options: object, callback: (err?: unknown) => void): void;
  _getManyAsync(keys: readonly Uint8Array[], options: object, callback: undefined): Promise<(Buffer | undefined | null)[]>;
}

type RocksLevelClass = new (location: string, options: object) => NativeDb;

let rocksLevel: RocksLevelClass | undefined;

function loadBinding(): RocksLevelClass {
  if (rocksLevel === undefined) {
    const require = createRequire(import.meta.url);
    rocksLevel = (require('@nxtedition/rocksdb') as { RocksLevel: RocksLevelClass }).RocksLevel;
  }
  return rocksLevel;
}

export interface RocksDbOpenOptions {
  /** RocksDB block cache (native memory, per DB). */
  readonly blockCacheBytes: number;
  /** Memtable budget (native memory, per DB). */
  readonly writeBufferBytes: number;
  /** ZSTD compression of SST files. */
  readonly compression: boolean;
}

const EMPTY = {};
const NOOP = (): void => undefined;
const BUFFERS = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;

/** A write batch: applied atomically by `write()`. */
export class RocksBatch {
  private count = 0;

  constructor(private readonly native: NativeBatch) {}

  get size(): number {
    return this.count;
  }

  put(key: Uint8Array, value: Uint8Array): void {
    this.native._put(key, value, EMPTY);
    this.count++;
  }

  del(key: Uint8Array): void {
    this.native._del(key, EMPTY);
    this.count++;
  }

  /** Writes atomically (WAL on, no fsync: a process crash keeps it, a machine crash may drop the newest batches). */
  write(): void {
    try {
      if (this.count > 0) this.native._writeSync(EMPTY);
    } finally {
      this.native._closeSync();
    }
  }

  discard(): void {
    this.native._closeSync();
  }
}

/**
 * A forward cursor over [gte, lt) on the point-in-time view taken when it was created (a RocksDB iterator's
 * implicit snapshot): later writes are invisible to it.
 */
export class RocksCursor {
  private closed = false;

  constructor(private native: NativeIterator | undefined) {}

  /** Up to `max` rows as [key, value, key, value, ...]; empty when the range is exhausted. */
  next(max: number): Buffer[] {
    if (this.native === undefined) return [];
    const { rows, finished } = this.native._nextvSync(max, EMPTY);
    if (finished) this.close();
    return rows as Buffer[];
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.native?._closeSync();
    this.native = undefined;
  }
}

export class RocksDb {
  private constructor(
    private readonly native: NativeDb,
    readonly location: string,
  ) {}

  static async open(location: string, options: RocksDbOpenOptions): Promise<RocksDb> {
    const RocksLevel = loadBinding();
    const native = new RocksLevel(location, {});
    await native.open({
      createIfMissing: true,
      walCompression: false,
      cacheSize: options.blockCacheBytes,
      // Level compaction sized from the memtable budget: memtables of budget/4, L1 = budget, L2+ compressed.
      compaction: 'level',
      memtableMemoryBudget: options.writeBufferBytes,
      compression: options.compression,
      optimize: 'point-lookup',
      infoLogLevel: 'error',
    });
    return new RocksDb(native, location);
  }

  get isOpen(): boolean {
    return this.native.status === 'open';
  }

  /** Values of `keys` (undefined when absent), read at one point in time. */
  getSync(keys: readonly Uint8Array[]): (Buffer | undefined)[] {
    return this.native._getManySync(keys, EMPTY) as (Buffer | undefined)[];
  }

  /** As getSync, off the thread (libuv pool); the point in time is when the read runs. */
  async get(keys: readonly Uint8Array[]): Promise<(Buffer | undefined)[]> {
    return (await this.native._getManyAsync(keys, EMPTY, undefined)) as (Buffer | undefined)[];
  }

  batch(): RocksBatch {
    return new RocksBatch(this.native.batch());
  }

  cursor(gte: Uint8Array, lt: Uint8Array): RocksCursor {
    return new RocksCursor(this.native.iterator({ ...BUFFERS, gte, lt }));
  }

  /**
   * Deletes [gte, lt) with one range tombstone (RocksDB DeleteRange, applied synchronously): constant cost
   * whatever the number of keys, unlike a batch of deletes.
   */
  deleteRange(gte: Uint8Array, lt: Uint8Array): void {
    this.native._clear({ gte, lt }, NOOP);
  }

  async close(): Promise<void> {
    if (this.native.status === 'open' || this.native.status === 'opening') await this.native.close();
  }
}
