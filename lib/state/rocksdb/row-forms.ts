import { ConfigError, type Key } from '../../core/index.ts';
import type { Bytes } from '../snapshot-format/key-bytes.ts';
import { decodeRow, encodeRow, type RowEntries } from '../snapshot-format/row-codec.ts';
import type { Namespace } from '../keyed-state.ts';
import { Row, type Slot } from './row.ts';
import type { StateKind, StateRegistry } from './state-registry.ts';

/**
 * Between a cached Row (live values: map state as a Map the row owns) and its stored form (row-codec.ts: the
 * shared snapshot form, map state as [userKey, value] pairs). Values of states that have no handle yet stay in
 * stored form until one is requested (`toLive` then converts them).
 */
export function encodeLiveRow(row: Row, registry: StateRegistry): Bytes | undefined {
  const flat: RowEntries = [];
  const slots = row.slots;
  for (let id = 0; id < slots.length; id++) {
    const slot = slots[id];
    if (slot === undefined || slot.size === 0) continue;
    const isMap = registry.byIdOf(id)?.kind === 'map';
    const items = slot.items;
    for (let i = 0; i < items.length; i += 2) {
      const value = items[i + 1];
      flat.push(id, items[i], isMap ? Array.from(value as Map<Key, unknown>) : value);
    }
  }
  return flat.length === 0 ? undefined : encodeRow(flat);
}

export function decodeStoredRow(
  bytes: Uint8Array,
  key: Key,
  keyGroup: number,
  registry: StateRegistry,
  source: string,
): Row {
  const flat = decodeRow(bytes, source);
  const row = new Row(key, keyGroup, true, flat.length / 3);
  for (let i = 0; i < flat.length; i += 3) {
    const id = flat[i] as number;
    const info = registry.byIdOf(id);
    const value = flat[i + 2];
    row.ensureSlot(id).set(flat[i + 1] as Namespace, info?.kind === undefined ? value : toLive(info.name, info.kind, value));
  }
  return row;
}

/** Live form of a stored value for a state of `kind`. */
export function toLive(name: string, kind: StateKind, value: unknown): unknown {
  if (kind === 'list') {
    if (!Array.isArray(value)) throw incompatible(name, kind);
    return value;
  }
  if (kind === 'map') {
    if (value instanceof Map) return value;
    if (!Array.isArray(value)) throw incompatible(name, kind);
    return new Map(value as [Key, unknown][]);
  }
  return value;
}

/** Converts the stored-form values of state `id` in a cached slot once the state gets its handle. */
export function slotToLive(slot: Slot, name: string, kind: StateKind): void {
  if (kind !== 'list' && kind !== 'map') return;
  const items = slot.items;
  for (let i = 1; i < items.length; i += 2) items[i] = toLive(name, kind, items[i]);
}

function incompatible(name: string, kind: StateKind): ConfigError {
  return new ConfigError(
    `restored entries of state "${name}" are not in the snapshot form of ${kind} state; was the state's kind changed?`,
  );
}
