import type { KeyGroupFunction, KeyGroupRange } from '../../core/index.ts';
import { HeapTimerService } from '../timers/heap-timer-service.ts';
import type { InternalTimerService } from '../timers/timer-service.ts';
import type { KeyedStateBackend } from '../backend.ts';
import { RocksDbKeyedStateBackend } from './rocksdb-backend.ts';
import { compileRocksDbStateOptions, type RocksDbStateOptions } from './rocksdb-options.ts';

export interface RocksDbServicesOptions extends RocksDbStateOptions {
  /** Separates this job's databases from other jobs' under `stateDir` (e.g. a hash of the checkpoint directory). */
  readonly jobKey?: string;
  /** Local-disk folder for temp files when `stateDir` is shared storage (see RocksDbScope.tempRoot). @default under stateDir */
  readonly tempDir?: string;
  /** Processing-time clock for TTL. @default Date.now */
  readonly now?: () => number;
}

/** The operator subtask a backend serves (as the runtime describes it). */
export interface RocksDbServiceScope {
  readonly operatorId: string;
  readonly subtask: number;
}

/** The KeyedServices shape (lib/runtime/operator-chain.ts), declared here so lib/state does not import lib/runtime. */
export interface RocksDbKeyedServices {
  createKeyedState(range: KeyGroupRange, maxParallelism: number, scope?: RocksDbServiceScope, keyGroupOf?: KeyGroupFunction): KeyedStateBackend;
  createTimerService(maxParallelism: number, keyedState: KeyedStateBackend, keyGroupOf?: KeyGroupFunction): InternalTimerService;
}

/**
 * Composition-root factory for keyed state in RocksDB (the counterpart of memoryServices): options are compiled
 * once here; every keyed operator subtask gets its own database under `${stateDir}/${jobKey}/${operatorId}-${subtask}`.
 * Timers live in the same database as the operator's keyed state (RocksDbTimerService), so their number is not
 * bounded by the heap either.
 */
export function rocksDbServices(options: RocksDbServicesOptions = {}): RocksDbKeyedServices {
  const compiled = compileRocksDbStateOptions(options);
  const now = options.now ?? Date.now;
  const job = options.jobKey;
  return {
    createKeyedState: (keyGroupRange, maxParallelism, scope, keyGroupOf) =>
      new RocksDbKeyedStateBackend({
        keyGroupRange,
        maxParallelism,
        ...(keyGroupOf === undefined ? {} : { keyGroupOf }),
        now,
        rocksdb: compiled,
        scope: scope === undefined ? undefined : { job, operatorId: scope.operatorId, subtask: scope.subtask, tempRoot: options.tempDir },
      }),
    createTimerService: (maxParallelism, keyedState, keyGroupOf) =>
      keyedState instanceof RocksDbKeyedStateBackend ? keyedState.timerService() : new HeapTimerService({ maxParallelism, keyGroupOf }),
  };
}
