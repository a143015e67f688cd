export { RocksDbKeyedStateBackend, type RocksDbKeyedStateBackendOptions } from './rocksdb-backend.ts';
export { rocksDbServices, type RocksDbKeyedServices, type RocksDbServicesOptions, type RocksDbServiceScope } from './rocksdb-services.ts';
export {
  ROCKSDB_STATE_DEFAULTS,
  compileRocksDbStateOptions,
  type CompiledRocksDbStateOptions,
  type MaterializationPolicy,
  type RocksDbStateOptions,
} from './rocksdb-options.ts';
export type { RocksDbScope } from './local-dirs.ts';
export type { RocksDbStateMetrics } from './rocksdb-metrics.ts';
