import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Key } from '../../core/index.ts';
import { decodeRow, encodeRow } from '../snapshot-format/row-codec.ts';
import type { StateFileHeader } from '../snapshot-format/state-file-format.ts';
import { StateFileWriter } from '../snapshot-format/state-file-writer.ts';
import { liveElements, liveMapEntries, type TtlPolicy, type TtlValue } from '../ttl.ts';
import type { MergedView } from './merged-view.ts';
import type { StateKind } from './state-registry.ts';

/** States with TTL at the snapshot's synchronous phase, and that phase's processing time. */
export interface TtlCut {
  readonly states: ReadonlyMap<number, { readonly kind: StateKind; readonly ttl: TtlPolicy }>;
  readonly now: number;
}

/** Rows between yields to the event loop while a file is written (the task keeps processing meanwhile). */
const ROWS_PER_YIELD = 4096;

export interface WriteViewOptions {
  /**
   * Awaited every few thousand rows, so other work on the thread runs meanwhile (default: one turn of the event
   * loop). Background writers pass one that also waits while a checkpoint completes.
   */
  readonly pace?: () => Promise<void>;
  /** fsync the file (default true); false when it is handed to a store whose `put` makes it durable. */
  readonly sync?: boolean;
}

/**
 * Writes the rows of `view` into a state file. A 'full' file leaves out keys without state; a 'changes' file
 * keeps them as tombstones (they delete what earlier files said). Entries whose TTL expired before the cut are
 * left out, as the memory backend leaves them out of its snapshots. Returns the file's size and rows.
 */
export async function writeViewToFile(
  path: string,
  header: StateFileHeader,
  view: MergedView,
  ttl: TtlCut,
  options: WriteViewOptions = {},
): Promise<{ bytes: number; rows: number }> {
  const pace = options.pace ?? yieldOnce;
  const writer = await StateFileWriter.create(path, header);
  const tombstones = header.kind === 'changes';
  const expiring = ttl.states.size > 0;
  try {
    let sinceYield = 0;
    while (view.next()) {
      let value: Uint8Array | undefined = view.value.length === 0 ? undefined : view.value;
      if (value !== undefined && expiring) value = dropExpired(value, ttl, path);
      if (value !== undefined || tombstones) writer.addRow(view.groupKey, value);
      if (writer.needsDrain) await writer.drain();
      if (++sinceYield >= ROWS_PER_YIELD) {
        sinceYield = 0;
        await pace();
      }
    }
    const bytes = await writer.finish({ sync: options.sync ?? true });
    return { bytes, rows: writer.rows };
  } catch (err) {
    await writer.abort();
    throw err;
  } finally {
    view.close();
  }
}

async function yieldOnce(): Promise<void> {
  await yieldToEventLoop();
}

/** The row without expired TTL entries: the same bytes when nothing expired, undefined when nothing is left. */
function dropExpired(bytes: Uint8Array, ttl: TtlCut, source: string): Uint8Array | undefined {
  const flat = decodeRow(bytes, source);
  let touched = false;
  const kept: unknown[] = [];
  for (let i = 0; i < flat.length; i += 3) {
    const id = flat[i] as number;
    const state = ttl.states.get(id);
    const value = state === undefined ? flat[i + 2] : liveValue(state.kind, state.ttl, flat[i + 2], ttl.now);
    if (value !== flat[i + 2]) touched = true;
    if (value !== undefined) kept.push(id, flat[i + 1], value);
  }
  if (!touched) return bytes;
  return kept.length === 0 ? undefined : encodeRow(kept);
}

function liveValue(kind: StateKind, policy: TtlPolicy, value: unknown, now: number): unknown {
  switch (kind) {
    case 'list':
      return liveElements(value as TtlValue<unknown>[], policy, now);
    case 'map': {
      const pairs = value as [Key, TtlValue<unknown>][];
      const live = liveMapEntries(pairs, policy, now);
      return live !== undefined && live.length === pairs.length ? value : live;
    }
    default:
      return policy.isExpired(value as TtlValue<unknown>, now) ? undefined : value;
  }
}
