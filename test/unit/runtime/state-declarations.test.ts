import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../lib/core/index.ts';
import { listState, valueState } from '../../../lib/state/index.ts';
import { MemoryKeyedStateBackend } from '../../../lib/state/memory/memory-backend.ts';
import { mergeDeclarations, trackStateDeclarations } from '../../../lib/runtime/state-declarations.ts';

const backend = () => new MemoryKeyedStateBackend({ keyGroupRange: { start: 0, end: 7 }, maxParallelism: 8, now: () => 0 });

describe('state declarations', () => {
  it('records each state an operator declares, with its kind and TTL', () => {
    const state = backend();
    const declared = trackStateDeclarations(state, 'op', []);
    state.getValueState(valueState('last', { ttlMs: 60_000 }));
    state.getListState(listState('seen'));
    expect(declared()).toEqual([
      { name: 'last', kind: 'value', ttlMs: 60_000 },
      { name: 'seen', kind: 'list' },
    ]);
  });

  it('refuses a restored state declared with another kind, or with TTL added or removed, naming operator and state', () => {
    const restored = [{ name: 'last', kind: 'value' as const }];
    expect(() => trackStateDeclarations(backend(), 'dedup', restored)).not.toThrow();
    const kind = backend();
    trackStateDeclarations(kind, 'dedup', restored);
    expect(() => kind.getListState(listState('last'))).toThrow(ConfigError);
    expect(() => kind.getListState(listState('last'))).toThrow(
      'operator "dedup": state "last" is value state without TTL in the checkpoint but list state without TTL in the job',
    );
    const ttl = backend();
    trackStateDeclarations(ttl, 'dedup', restored);
    expect(() => ttl.getValueState(valueState('last', { ttlMs: 5 }))).toThrow(/value state with a TTL of 5 ms in the job/);
    // Another TTL length reads the same entries: accepted, as is a state of another name.
    const ok = backend();
    trackStateDeclarations(ok, 'dedup', [{ name: 'last', kind: 'value', ttlMs: 10 }]);
    expect(() => ok.getValueState(valueState('last', { ttlMs: 20 }))).not.toThrow();
    expect(() => ok.getListState(listState('other'))).not.toThrow();
  });

  it('merges the declarations of every old subtask, once per name', () => {
    expect(mergeDeclarations([undefined, [{ name: 'a', kind: 'map' }], [{ name: 'a', kind: 'map' }, { name: 'b', kind: 'list' }]])).toEqual([
      { name: 'a', kind: 'map' },
      { name: 'b', kind: 'list' },
    ]);
  });
});
