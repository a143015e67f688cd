import { keyGroupRangeContains, type Key, type KeyGroupRange } from '../../core/index.ts';
import type { FileKeyedStateSnapshot, SharedStateStore } from '../backend.ts';
import type { Namespace } from '../keyed-state.ts';
import { visitHandleFiles } from './handle-files.ts';
import { decodeGroupKey, groupKeyKeyGroup } from './key-bytes.ts';
import { decodeRow } from './row-codec.ts';
import { StoredStateCorruptError } from './state-errors.ts';

/** Receives the state of one key, in file order; `entries` undefined means the key has no state any more. */
export type KeyStateVisitor = (
  keyGroup: number,
  key: Key,
  entries: readonly (readonly [stateName: string, namespace: Namespace, value: unknown])[] | undefined,
) => void;

/**
 * Decodes every key of `handle` whose key group is in `range`, applying files oldest first: a later visit of a
 * key replaces everything an earlier one said about it. For backends that keep decoded state (memory).
 */
export async function readHandleEntries(
  handle: FileKeyedStateSnapshot,
  store: SharedStateStore | undefined,
  range: KeyGroupRange,
  tempDir: string,
  visit: KeyStateVisitor,
): Promise<void> {
  await visitHandleFiles(handle, store, tempDir, async (reader, ref) => {
    const names = new Map(reader.header.states);
    for (let rows = await reader.next(); rows !== undefined; rows = await reader.next()) {
      for (let i = 0; i < rows.count; i++) {
        const groupKey = rows.groupKeys[i] as Buffer;
        const keyGroup = groupKeyKeyGroup(groupKey);
        if (!keyGroupRangeContains(range, keyGroup)) continue;
        const key = decodeGroupKey(groupKey);
        const value = rows.values[i];
        if (value === undefined) {
          visit(keyGroup, key, undefined);
          continue;
        }
        const flat = decodeRow(value, ref.path);
        const entries: [string, Namespace, unknown][] = [];
        for (let j = 0; j < flat.length; j += 3) {
          const name = names.get(flat[j] as number);
          if (name === undefined) throw new StoredStateCorruptError(ref.path, `a row uses state id ${String(flat[j])}, which its header does not name`);
          entries.push([name, flat[j + 1] as Namespace, flat[j + 2]]);
        }
        visit(keyGroup, key, entries);
      }
    }
  });
}
