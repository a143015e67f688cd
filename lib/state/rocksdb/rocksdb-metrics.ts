/** Counters of one RocksDB backend instance (cumulative since it was created). */
export interface RocksDbStateMetrics {
  /** Keys in the write-behind cache now. */
  cachedKeys: number;
  /** Multi-gets issued by prefetch, and the keys they read. */
  prefetchReads: number;
  prefetchedKeys: number;
  /** Keys read synchronously because they were not prefetched (correct, but one native call each). */
  syncReads: number;
  /** Keys evicted from the cache, and rows written to RocksDB (evictions and checkpoints). */
  evictedKeys: number;
  writtenRows: number;
  /** Changelog segments and full materialisations written, with their bytes. */
  changelogFiles: number;
  changelogBytes: number;
  fullFiles: number;
  fullBytes: number;
  /** Restores that reused the local database, and restores that read state files or snapshots. */
  localRecoveries: number;
  fileRestores: number;
  /** Sealed generations moved into the main area. */
  promotedGenerations: number;
  /** Background materialisations or promotions that failed (retried later; the error is in `lastBackgroundError`). */
  backgroundFailures: number;
}

export function emptyMetrics(): RocksDbStateMetrics {
  return {
    cachedKeys: 0,
    prefetchReads: 0,
    prefetchedKeys: 0,
    syncReads: 0,
    evictedKeys: 0,
    writtenRows: 0,
    changelogFiles: 0,
    changelogBytes: 0,
    fullFiles: 0,
    fullBytes: 0,
    localRecoveries: 0,
    fileRestores: 0,
    promotedGenerations: 0,
    backgroundFailures: 0,
  };
}
