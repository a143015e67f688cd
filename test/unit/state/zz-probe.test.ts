import { afterAll, it } from 'vitest';
import '/work/main/test/unit/state/rocksdb-cache.test.ts';
afterAll(() => console.log('captures', (globalThis as any).__cap, 'takes', (globalThis as any).__take));
it('noop', () => {});
