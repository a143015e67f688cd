import { Packr } from 'msgpackr';
import { ExchangeError } from './exchange-error.ts';

/**
 * The frames of the exchange stream, one per Kinesis record. A data frame is a batch of records of one edge from
 * one producer slot to one target shard, numbered by `seq` within the producer's epoch (one counter per edge,
 * producer and epoch, shared by all targets). Markers and start frames go to every target shard.
 */
export interface DataFrame {
  readonly kind: 'data';
  readonly edge: string;
  readonly producer: number;
  readonly epoch: number;
  readonly seq: number;
  readonly values: readonly unknown[];
  readonly timestamps: readonly number[];
}

/** Written at the producer's checkpoint barrier, after every data frame with seq <= `sentThrough` was acknowledged. */
export interface MarkerFrame {
  readonly kind: 'marker';
  readonly edge: string;
  readonly producer: number;
  readonly epoch: number;
  readonly checkpointId: number;
  readonly sentThrough: number;
}

/**
 * The first frame of a producer epoch in every shard. `from` is the sender state the epoch restored (a completed
 * checkpoint): epoch `from.epoch` is committed through `from.sentThrough`, and nothing of any older epoch beyond what
 * was committed before, nor anything of the epochs between, will ever be committed. Absent `from`: a fresh start,
 * nothing older is committed.
 */
export interface StartFrame {
  readonly kind: 'start';
  readonly edge: string;
  readonly producer: number;
  readonly epoch: number;
  readonly from?: { readonly checkpointId: number; readonly epoch: number; readonly sentThrough: number };
}

export type ExchangeFrame = DataFrame | MarkerFrame | StartFrame;

/** Largest frame (one Kinesis record's data); Kinesis allows 1 MiB, smaller frames keep PutRecords calls even. */
export const MAX_FRAME_BYTES = 256 * 1024;

const UTF8 = new TextEncoder();
const DATA = 0;
const MARKER = 1;
const START = 2;
type DataTuple = [typeof DATA, string, number, number, number, Uint8Array];
type DataBody = [unknown[], number[]];
type MarkerTuple = [typeof MARKER, string, number, number, number, number];
type StartTuple = [typeof START, string, number, number, number | null, number | null, number | null];

// No shared record structures: every frame must decode on its own, in another process, in any order.
const packr = new Packr({ useRecords: false, moreTypes: true });

export function encodeFrame(frame: ExchangeFrame): Uint8Array {
  let tuple: DataTuple | MarkerTuple | StartTuple;
  switch (frame.kind) {
    case 'data':
      return encodeDataFrame(frame, encodeBody(frame.values, frame.timestamps));
    case 'marker':
      tuple = [MARKER, frame.edge, frame.producer, frame.epoch, frame.checkpointId, frame.sentThrough];
      break;
    case 'start':
      tuple = [START, frame.edge, frame.producer, frame.epoch, frame.from?.checkpointId ?? null, frame.from?.epoch ?? null, frame.from?.sentThrough ?? null];
      break;
  }
  return packExact(tuple);
}

// packr reuses a large buffer: copy out exactly this value's bytes.
function packExact(value: unknown): Uint8Array {
  const packed = packr.pack(value);
  return Uint8Array.prototype.slice.call(packed, 0, packed.length) as Uint8Array;
}

/** The records of a data frame are packed on their own, so a frame's size is known before its seq is chosen. */
function encodeBody(values: readonly unknown[], timestamps: readonly number[]): Uint8Array {
  return packExact([values, timestamps] satisfies readonly [readonly unknown[], readonly number[]]);
}

function encodeDataFrame(head: { edge: string; producer: number; epoch: number; seq: number }, body: Uint8Array): Uint8Array {
  const tuple: DataTuple = [DATA, head.edge, head.producer, head.epoch, head.seq, body];
  return packExact(tuple);
}

/** Upper bound of a data frame's bytes besides its body: the tuple, the edge id, four integers, the bin header. */
function dataHeaderBound(edge: string): number {
  return 48 + UTF8.encode(edge).byteLength;
}

export function decodeFrame(bytes: Uint8Array, where: string): ExchangeFrame {
  let tuple: unknown;
  try {
    tuple = packr.unpack(bytes);
  } catch (cause) {
    throw new ExchangeError(`${where}: not an exchange frame (${String(cause)}); is another writer using the exchange stream?`, { cause });
  }
  if (!Array.isArray(tuple) || typeof tuple[1] !== 'string' || !isInt(tuple[2]) || !isInt(tuple[3])) throw malformed(where);
  const [kind, edge, producer, epoch] = tuple as [number, string, number, number];
  if (kind === DATA) {
    const [, , , , seq, body] = tuple as DataTuple;
    if (!isInt(seq) || !(body instanceof Uint8Array)) throw malformed(where);
    let decoded: unknown;
    try {
      decoded = packr.unpack(body);
    } catch (cause) {
      throw new ExchangeError(`${where}: the records of an exchange frame do not decode (${String(cause)})`, { cause });
    }
    const [values, timestamps] = (Array.isArray(decoded) ? decoded : []) as Partial<DataBody>;
    if (!Array.isArray(values) || !Array.isArray(timestamps) || values.length !== timestamps.length) throw malformed(where);
    return { kind: 'data', edge, producer, epoch, seq, values, timestamps };
  }
  if (kind === MARKER) {
    const [, , , , checkpointId, sentThrough] = tuple as MarkerTuple;
    if (!isInt(checkpointId) || !isInt(sentThrough)) throw malformed(where);
    return { kind: 'marker', edge, producer, epoch, checkpointId, sentThrough };
  }
  if (kind === START) {
    const [, , , , c, e, n] = tuple as StartTuple;
    if (c === null || e === null || n === null) return { kind: 'start', edge, producer, epoch };
    if (!isInt(c) || !isInt(e) || !isInt(n)) throw malformed(where);
    return { kind: 'start', edge, producer, epoch, from: { checkpointId: c, epoch: e, sentThrough: n } };
  }
  throw malformed(where);
}

function isInt(v: unknown): v is number {
  return Number.isSafeInteger(v);
}

function malformed(where: string): ExchangeError {
  return new ExchangeError(`${where}: a malformed exchange frame; is another writer using the exchange stream?`);
}

/** An encoded data frame and the seq it carries. */
export interface EncodedDataFrame {
  readonly seq: number;
  readonly bytes: Uint8Array;
  readonly records: number;
}

/**
 * Encodes records of one edge, producer and target as data frames of at most `maxBytes` each, numbering them with
 * `nextSeq()`. A batch that does not fit is halved until it does (one encoding per level of halving); a single
 * record that does not fit fails (ExchangeError naming its size).
 */
export function encodeDataFrames(
  head: { readonly edge: string; readonly producer: number; readonly epoch: number },
  values: readonly unknown[],
  timestamps: readonly number[],
  nextSeq: () => number,
  maxBytes: number = MAX_FRAME_BYTES,
): EncodedDataFrame[] {
  const out: EncodedDataFrame[] = [];
  const headerBound = dataHeaderBound(head.edge);
  if (maxBytes <= headerBound) throw new ExchangeError(`exchange frames of ${maxBytes} bytes cannot hold a frame header of edge ${head.edge}`);
  const encodeRange = (from: number, to: number): void => {
    const body = encodeBody(values.slice(from, to), timestamps.slice(from, to));
    if (body.byteLength + headerBound > maxBytes) {
      if (to - from === 1) {
        throw new ExchangeError(
          `edge ${head.edge}: one record encodes to ${body.byteLength} bytes, more than an exchange frame holds (${maxBytes - headerBound}); make records smaller before this keyBy/rebalance`,
        );
      }
      const mid = from + Math.floor((to - from) / 2);
      encodeRange(from, mid);
      encodeRange(mid, to);
      return;
    }
    const seq = nextSeq();
    out.push({ seq, bytes: encodeDataFrame({ ...head, seq }, body), records: to - from });
  };
  if (values.length > 0) encodeRange(0, values.length);
  return out;
}
