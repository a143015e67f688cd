import type { KeyGroupRange } from '../core/index.ts';
import { MemoryKeyedStateBackend } from '../state/memory/memory-backend.ts';
import { HeapTimerService } from '../state/timers/heap-timer-service.ts';
import type { KeyedServices } from './operator-chain.ts';

/** The embedded default: keyed state in memory, timers on a heap. */
export function memoryServices(now: () => number = Date.now): KeyedServices {
  return {
    createKeyedState: (keyGroupRange: KeyGroupRange, maxParallelism: number) =>
      new MemoryKeyedStateBackend({ keyGroupRange, maxParallelism, now }),
    createTimerService: (maxParallelism: number) => new HeapTimerService({ maxParallelism }),
  };
}
