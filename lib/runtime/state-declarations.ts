import { ConfigError } from '../core/index.ts';
import type { KeyedStateBackend, StateDescriptor } from '../state/index.ts';

/** A keyed state as its operator declared it (`getState(valueState('name', ttl))` ...), recorded in snapshots. */
export interface DeclaredState {
  readonly name: string;
  readonly kind: StateDescriptor['kind'];
  /** Present when the state has a TTL: its values are stored with their timestamps. */
  readonly ttlMs?: number;
}

const GETTERS = ['getValueState', 'getListState', 'getMapState', 'getReducingState', 'getAggregatingState'] as const;

/**
 * Records the states an operator declares on `backend`, and refuses (ConfigError) a declaration that contradicts
 * the restored one of the same name: another kind, or TTL added or removed (values are stored with or without
 * their timestamps), which would read restored entries as something they are not. Wraps the backend's state
 * getters on the instance: they run when the operator opens, never per record. Returns the declarations so far.
 */
export function trackStateDeclarations(
  backend: KeyedStateBackend,
  operatorName: string,
  restored: readonly DeclaredState[],
): () => DeclaredState[] {
  const declared = new Map<string, DeclaredState>();
  const before = new Map(restored.map((s) => [s.name, s]));
  const target = backend as unknown as Record<string, (descriptor: StateDescriptor) => unknown>;
  for (const getter of GETTERS) {
    const original = target[getter]!.bind(backend);
    target[getter] = (descriptor: StateDescriptor) => {
      const now: DeclaredState = {
        name: descriptor.name,
        kind: descriptor.kind,
        ...(descriptor.ttl === undefined ? {} : { ttlMs: descriptor.ttl.ttlMs }),
      };
      const old = before.get(now.name);
      if (old !== undefined && (old.kind !== now.kind || (old.ttlMs === undefined) !== (now.ttlMs === undefined))) {
        throw new ConfigError(
          `operator "${operatorName}": state "${now.name}" is ${describe(old)} in the checkpoint but ${describe(now)} in the job; ` +
            'restore with the job that wrote it, give the new state another name, or start without this state (--fresh)',
        );
      }
      declared.set(now.name, now);
      return original(descriptor);
    };
  }
  return () => [...declared.values()];
}

function describe(state: DeclaredState): string {
  return `${state.kind} state ${state.ttlMs === undefined ? 'without TTL' : `with a TTL of ${state.ttlMs} ms`}`;
}

/** The declarations of every old subtask's snapshot of an operator, one per state name. */
export function mergeDeclarations(parts: readonly (readonly DeclaredState[] | undefined)[]): DeclaredState[] {
  const merged = new Map<string, DeclaredState>();
  for (const part of parts) for (const s of part ?? []) if (!merged.has(s.name)) merged.set(s.name, s);
  return [...merged.values()];
}
