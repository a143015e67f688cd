import { InternalError, type Key } from '../../core/index.ts';
import type { Namespace } from '../keyed-state.ts';

/**
 * The backend's current key, shared by every handle of the backend so that switching keys is two field writes.
 * `index` is keyGroup - range.start; -1 until a key is set.
 */
export class CurrentKey {
  key: Key = '';
  index = -1;
}

/** Entries of one key: namespace -> value. */
export type NamespaceEntries<V> = Map<Namespace, V>;

/**
 * All entries of one named state: per key group (array index = keyGroup - range.start) a map key -> namespace ->
 * value, created lazily. An access of the current key is an array index and two Map lookups. Empty per-key maps
 * are removed so that keys that come and go do not leak.
 */
export class StateTable<V = unknown> {
  readonly groups: (Map<Key, NamespaceEntries<V>> | undefined)[];

  constructor(
    readonly name: string,
    groupCount: number,
    private readonly current: CurrentKey,
  ) {
    this.groups = new Array<Map<Key, NamespaceEntries<V>> | undefined>(groupCount).fill(undefined);
  }

  /** The namespaces of the current key, or undefined if it has none. */
  entriesOfCurrentKey(): NamespaceEntries<V> | undefined {
    const current = this.current;
    const byKey = this.groups[current.index];
    if (byKey === undefined) {
      if (current.index < 0) throw this.noCurrentKey();
      return undefined;
    }
    return byKey.get(current.key);
  }

  get(namespace: Namespace): V | undefined {
    const entries = this.entriesOfCurrentKey();
    return entries === undefined ? undefined : entries.get(namespace);
  }

  set(namespace: Namespace, value: V): void {
    this.entriesForWrite().set(namespace, value);
  }

  /** The namespaces of the current key, created if missing; the caller must leave at least one entry in it. */
  entriesForWrite(): NamespaceEntries<V> {
    const current = this.current;
    let byKey = this.groups[current.index];
    if (byKey === undefined) {
      if (current.index < 0) throw this.noCurrentKey();
      byKey = new Map();
      this.groups[current.index] = byKey;
    }
    let entries = byKey.get(current.key);
    if (entries === undefined) {
      entries = new Map();
      byKey.set(current.key, entries);
    }
    return entries;
  }

  delete(namespace: Namespace): void {
    const current = this.current;
    const byKey = this.groups[current.index];
    if (byKey === undefined) {
      if (current.index < 0) throw this.noCurrentKey();
      return;
    }
    const entries = byKey.get(current.key);
    if (entries !== undefined && entries.delete(namespace) && entries.size === 0) byKey.delete(current.key);
  }

  /** Stores an entry of key group `index` without touching the current key (restore). */
  load(index: number, key: Key, namespace: Namespace, value: V): void {
    let byKey = this.groups[index];
    if (byKey === undefined) {
      byKey = new Map();
      this.groups[index] = byKey;
    }
    let entries = byKey.get(key);
    if (entries === undefined) {
      entries = new Map();
      byKey.set(key, entries);
    }
    entries.set(namespace, value);
  }

  /** Removes every entry of `key` in key group `index` (restore: a later state file replaces the key's state). */
  deleteKey(index: number, key: Key): void {
    this.groups[index]?.delete(key);
  }

  /** Rewrites every stored value in place (format conversion after restore). */
  convertAll(convert: (value: V) => V): void {
    for (const byKey of this.groups) {
      if (byKey === undefined) continue;
      for (const entries of byKey.values()) for (const [ns, v] of entries) entries.set(ns, convert(v));
    }
  }

  keys(namespace: Namespace): Key[] {
    const keys: Key[] = [];
    for (const byKey of this.groups) {
      if (byKey === undefined) continue;
      for (const [key, entries] of byKey) if (entries.has(namespace)) keys.push(key);
    }
    return keys;
  }

  entryCount(): number {
    let count = 0;
    for (const byKey of this.groups) {
      if (byKey === undefined) continue;
      for (const entries of byKey.values()) count += entries.size;
    }
    return count;
  }

  clear(): void {
    this.groups.fill(undefined);
  }

  private noCurrentKey(): InternalError {
    return new InternalError(`state "${this.name}" accessed before a current key was set`);
  }
}
