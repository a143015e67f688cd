import type { KeyedServices } from './operator-chain.ts';
import { memoryServices } from './default-services.ts';
import type { StateBackendConfig } from './state-backend-config.ts';

/**
 * The keyed services of one thread for the configured backend. RocksDB is imported only when chosen, so jobs on the
 * memory backend never load the native binding.
 */
export async function createStateServices(
  config: Required<StateBackendConfig>,
  jobKey: string,
  now: () => number = Date.now,
): Promise<KeyedServices> {
  if (config.kind === 'memory') return memoryServices(now);
  const { rocksDbServices } = await import('../state/rocksdb/index.ts');
  return rocksDbServices({ stateDir: config.dir, jobKey, now });
}
