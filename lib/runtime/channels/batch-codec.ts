import { Packr } from 'msgpackr';
import type { RecordBatch } from '../../core/index.ts';

/**
 * The wire form of a record batch, shared by every channel kind that leaves the thread (MessagePort today, a
 * network or stream channel between processes later): one msgpackr encoding, or the batch itself where bytes
 * cannot carry it faithfully.
 */
type BatchTuple = [values: unknown[], timestamps: number[], split: string | null, offsets: number[] | null];
/** A batch on the wire: msgpackr bytes, or the batch itself for the structured clone (see encodeBatch). */
export type BatchWire = { b: Uint8Array } | { v: BatchTuple };

const packr = new Packr({ useRecords: true, moreTypes: true });

/**
 * msgpackr writes strings as UTF-8, which cannot hold a lone surrogate ("\uD800x" from a JSON "\ud800" escape): it
 * writes U+FFFD instead, so across threads such a string would change (and its key land in the wrong key group),
 * while in one thread it stays as it was. Every lone surrogate therefore leaves these bytes in the encoding.
 */
const REPLACEMENT_CHARACTER_UTF8 = Buffer.from([0xef, 0xbf, 0xbd]);

/**
 * A batch as it crosses the port: msgpackr bytes (transferred), or, when the bytes contain a U+FFFD, the batch
 * itself for the structured clone, which keeps strings as UTF-16 so lone surrogates survive. The check is one
 * native byte search over the encoding (no walk over the values); batches with real U+FFFD characters take the
 * slower clone too, and arrive the same. A channel that can only carry bytes must encode `{ v }` itself (e.g. as
 * JSON with the surrogates escaped).
 */
export function encodeBatch(batch: RecordBatch<unknown>): BatchWire {
  const tuple: BatchTuple = [batch.values, batch.timestamps, batch.split ?? null, batch.offsets ?? null];
  const packed = packr.pack(tuple);
  if (packed.indexOf(REPLACEMENT_CHARACTER_UTF8) >= 0) return { v: tuple };
  // packr reuses a large buffer; copy out exactly the bytes so only they are transferred.
  return { b: Uint8Array.prototype.slice.call(packed, 0, packed.length) as Uint8Array };
}

export function decodeBatch(wire: BatchWire): RecordBatch<unknown> {
  const [values, timestamps, split, offsets] = 'v' in wire ? wire.v : (packr.unpack(wire.b) as BatchTuple);
  return { values, timestamps, split: split ?? undefined, offsets: offsets ?? undefined };
}

/** Tells a batch on the wire from the other messages a channel sends (control elements, credits). */
export function isBatchWire(message: object): message is BatchWire {
  return 'b' in message || 'v' in message;
}
