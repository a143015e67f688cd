import type { KeyGroupFunction, KeyGroupRange } from '../core/index.ts';
import { MemoryKeyedStateBackend } from '../state/memory/memory-backend.ts';
import { HeapTimerService } from '../state/timers/heap-timer-service.ts';
import type { KeyedServices } from './operator-chain.ts';

/** The embedded default: keyed state in memory, timers on a heap. */
export function memoryServices(now: () => number = Date.now): KeyedServices {
  return {
    createKeyedState: (keyGroupRange: KeyGroupRange, maxParallelism: number, _scope, keyGroupOf?: KeyGroupFunction) =>
      new MemoryKeyedStateBackend({ keyGroupRange, maxParallelism, now, keyGroupOf }),
    createTimerService: (maxParallelism: number, _keyedState, keyGroupOf?: KeyGroupFunction) =>
      new HeapTimerService({ maxParallelism, keyGroupOf }),
  };
}
