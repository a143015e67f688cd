/**
 * Published Nexmark figures per core, to compare with: events/s per core as their authors computed them
 * (events / (CPU cores used x seconds)). Their setups differ from ours (clusters, RocksDB state and checkpoints for
 * Flink, Kafka sources for RisingWave): read them as orders of magnitude, not as a controlled comparison.
 */
export interface PublishedFigures {
  readonly system: string;
  readonly source: string;
  readonly hardware: string;
  /** Events/s per core by query; absent where none was published. */
  readonly perCore: Readonly<Record<string, number>>;
}

/** nexmark/nexmark README, 2020-09 (first published table; TPS mode: warm-up 3 min, measured 3 min). */
export const FLINK_2020: PublishedFigures = {
  system: 'Apache Flink (Flink SQL, 2020)',
  source: 'github.com/nexmark/nexmark README, 2020-09-03',
  hardware: '3 x Aliyun ecs.i2g.2xlarge (Xeon 2.5 GHz, 8 vCores, 32 GB), 8 TaskManagers x 1 slot, RocksDB, checkpoints every 3 min, 10 M events/s offered',
  perCore: { q0: 235e3, q1: 228e3, q2: 258e3, q3: 198e3, q4: 26e3, q5: 26e3, q7: 12e3, q8: 135e3, q11: 40e3, q12: 75e3 },
};

/** nexmark/nexmark README, 2021-05 (Flink 1.13; 100 M events). */
export const FLINK_2021: PublishedFigures = {
  system: 'Apache Flink 1.13 (Flink SQL)',
  source: 'github.com/nexmark/nexmark README, 2021-05-11',
  hardware: '3 workers x 8 cores, 32 GB, 8 TaskManagers x 1 slot, parallelism 8, RocksDB, checkpoints every 3 min, 100 M events at 10 M/s',
  perCore: { q0: 246e3, q1: 240e3, q2: 268e3, q3: 176e3, q4: 37.2e3, q5: 25.2e3, q7: 12.7e3, q8: 172e3, q11: 40.7e3, q12: 81.1e3 },
};

/** nexmark/nexmark README since 2021-05-31 (Flink 1.13 to 2.0; the table still published today). */
export const FLINK_CURRENT: PublishedFigures = {
  system: 'Apache Flink 1.13-2.0 (Flink SQL)',
  source: 'github.com/nexmark/nexmark README (GUIDE_V1.md), 2021-05-31 to 2025',
  hardware: '3 workers x 8 cores, 32 GB, 8 TaskManagers x 1 slot, parallelism 8, RocksDB, checkpoints every 3 min, 100 M events at 10 M/s',
  perCore: { q0: 155.02e3, q1: 157.94e3, q2: 175.21e3, q3: 152.12e3, q4: 34.33e3, q5: 22.14e3, q7: 12.33e3, q8: 146.14e3, q11: 39.7e3, q12: 75.67e3 },
};

/** RisingWave's documentation, "Stream processing benchmarks: Nexmark results" (q11 and q12 not published). */
export const RISINGWAVE_2023: PublishedFigures = {
  system: 'RisingWave (nightly-20230309)',
  source: 'docs.risingwave.com, get-started/rw-benchmarks-stream-processing',
  hardware: 'one node, 8 vCPUs, 16 GB, S3 state storage, Kafka source, blackhole sink',
  perCore: { q0: 118.41e3, q1: 119.37e3, q2: 127.36e3, q3: 97.358e3, q4: 13.923e3, q5: 5.2249e3, q7: 20.348e3, q8: 60.732e3 },
};

export const FLINK_FIGURES: readonly PublishedFigures[] = [FLINK_2020, FLINK_2021, FLINK_CURRENT];

/** The best per-core figure published for Flink for a query, over the tables above. */
export function bestFlinkPerCore(query: string): number | undefined {
  const values = FLINK_FIGURES.map((f) => f.perCore[query]).filter((v): v is number => v !== undefined);
  return values.length === 0 ? undefined : Math.max(...values);
}

/** The absolute goals, events/s per core with in-memory state; every query also >= 3x Flink's best. */
export const ABSOLUTE_GOALS: Readonly<Record<string, number>> = {
  q0: 1_000_000,
  q1: 1_000_000,
  q2: 1_000_000,
  q5: 250_000,
  q7: 200_000,
  q8: 200_000,
};

export function goalPerCore(query: string): number {
  const flink = bestFlinkPerCore(query);
  return Math.max(ABSOLUTE_GOALS[query] ?? 0, flink === undefined ? 0 : 3 * flink);
}
