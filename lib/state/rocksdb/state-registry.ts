import { ConfigError, InternalError } from '../../core/index.ts';
import type { StateDescriptor } from '../descriptors.ts';
import { TtlPolicy } from '../ttl.ts';

export type StateKind = StateDescriptor['kind'];

export interface StateInfo {
  readonly id: number;
  readonly name: string;
  /** Undefined until a handle is requested (state known only from restored data). */
  kind: StateKind | undefined;
  ttl: TtlPolicy | undefined;
  handle: unknown;
}

/** Ids are u16 in keys and rows. */
const MAX_STATES = 0xffff;

/**
 * The backend's states by name and by the small integer id rows use. Ids are assigned once and kept in the
 * database (and in every state file's header), so they stay stable across checkpoints of one lineage; restoring
 * files written with other ids maps them by name.
 */
export class StateRegistry {
  private readonly byName = new Map<string, StateInfo>();
  private readonly byId: (StateInfo | undefined)[] = [];

  constructor(private readonly now: () => number) {}

  get(name: string): StateInfo | undefined {
    return this.byName.get(name);
  }

  byIdOf(id: number): StateInfo | undefined {
    return this.byId[id];
  }

  /** Adds a name with a known id (from the database's dictionary). */
  load(id: number, name: string): void {
    const existing = this.byId[id];
    if (existing !== undefined && existing.name !== name) {
      throw new InternalError(`state id ${id} is "${existing.name}" here and "${name}" in the stored dictionary`);
    }
    if (existing === undefined) this.add(id, name);
  }

  /** The id of `name`, assigning the next free one; `isNew` tells the caller to persist it. */
  idFor(name: string): { id: number; isNew: boolean } {
    const existing = this.byName.get(name);
    if (existing !== undefined) return { id: existing.id, isNew: false };
    const id = this.byId.length;
    if (id >= MAX_STATES) throw new ConfigError(`an operator may have at most ${MAX_STATES} keyed states`);
    this.add(id, name);
    return { id, isNew: true };
  }

  /**
   * Checks a handle request against an earlier one of the same name (same kind, same TTL) and returns the state;
   * `register` runs when the name gets its first handle.
   */
  register(descriptor: Pick<StateDescriptor, 'name' | 'kind' | 'ttl'>): { info: StateInfo; isNewId: boolean } {
    const { id, isNew } = this.idFor(descriptor.name);
    const info = this.byId[id] as StateInfo;
    if (info.kind !== undefined) {
      if (info.kind !== descriptor.kind) {
        throw new ConfigError(
          `state "${descriptor.name}" was registered as ${info.kind} state and is now requested as ` +
            `${descriptor.kind} state; use a different name for each state`,
        );
      }
      const sameTtl = info.ttl === undefined ? descriptor.ttl === undefined : info.ttl.sameAs(descriptor.ttl);
      if (!sameTtl) throw new ConfigError(`state "${descriptor.name}" was already registered with a different TTL configuration`);
    }
    return { info, isNewId: isNew };
  }

  /** Completes a first registration (after `register` found no kind yet). */
  setKind(info: StateInfo, descriptor: Pick<StateDescriptor, 'kind' | 'ttl'>, handle: unknown): void {
    info.kind = descriptor.kind;
    info.ttl = descriptor.ttl === undefined ? undefined : new TtlPolicy(descriptor.ttl, this.now);
    info.handle = handle;
  }

  /** [id, name] of every state, for state file headers. */
  dictionary(): [number, string][] {
    const out: [number, string][] = [];
    for (const info of this.byId) if (info !== undefined) out.push([info.id, info.name]);
    return out;
  }

  /** States with TTL, by id: their expired entries are left out of state files. */
  ttlStates(): Map<number, { kind: StateKind; ttl: TtlPolicy }> {
    const out = new Map<number, { kind: StateKind; ttl: TtlPolicy }>();
    for (const info of this.byId) {
      if (info?.ttl !== undefined && info.kind !== undefined) out.set(info.id, { kind: info.kind, ttl: info.ttl });
    }
    return out;
  }

  clear(): void {
    this.byName.clear();
    this.byId.length = 0;
  }

  private add(id: number, name: string): void {
    const info: StateInfo = { id, name, kind: undefined, ttl: undefined, handle: undefined };
    while (this.byId.length < id) this.byId.push(undefined);
    this.byId[id] = info;
    this.byName.set(name, info);
  }
}
