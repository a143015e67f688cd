import type { _Record } from '@aws-sdk/client-kinesis';
import { NO_TIMESTAMP } from '../../../core/index.ts';
import type { DeadLetter } from '../dead-letter.ts';
import { errorMessage } from './errors.ts';

/** What a deserializer may want besides the bytes. One object is reused for every record: do not keep it. */
export interface KinesisRecordInfo {
  shardId: string;
  sequenceNumber: string;
  partitionKey: string;
  /** ApproximateArrivalTimestamp, epoch ms (NaN when Kinesis gave none). */
  approximateArrivalTimestamp: number;
}

/** Turns a record's data into a value; throwing sends the record to the dead letters. */
export type KinesisDeserializer<T> = (data: Uint8Array, record: KinesisRecordInfo) => T;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The default: UTF-8 JSON (invalid UTF-8 and invalid JSON are both rejected). */
export const jsonDeserializer: KinesisDeserializer<unknown> = (data) => JSON.parse(utf8.decode(data));

/** Records of one fetch, decoded, waiting to be returned by `poll`. */
export interface DecodedChunk<T> {
  readonly values: T[];
  /** ApproximateArrivalTimestamp (ms) per value, NO_TIMESTAMP when Kinesis gave none. */
  readonly timestamps: number[];
  readonly sequenceNumbers: string[];
  /** The fetched record of each value (kept so that a value rejected later can become a dead letter). */
  readonly records: _Record[];
  /** Sequence number of the fetch's last record, decoded or not: the position once the chunk is returned. */
  readonly lastSequenceNumber: string;
  readonly deadLetters: DeadLetter[];
}

/**
 * Which fetched records an aligned sub-split returns (see aligned-sub-split.ts): `skip` leaves a record out, not
 * decoded; `foreign` makes it a dead letter with `foreignReason`.
 */
export interface RecordSelection {
  readonly fate: (record: _Record) => 'keep' | 'skip' | 'foreign';
  readonly foreignReason: string;
}

/**
 * Decodes fetched records; those the deserializer rejects become dead letters (with their data in base64). With
 * `selection`, only the records it keeps are decoded; the chunk's last sequence number is still the fetch's last.
 */
export function decodeRecords<T>(
  records: readonly _Record[],
  stream: string,
  shardId: string,
  deserialize: KinesisDeserializer<T>,
  selection?: RecordSelection,
): DecodedChunk<T> {
  const n = records.length;
  const values: T[] = [];
  const timestamps: number[] = [];
  const sequenceNumbers: string[] = [];
  const decoded: _Record[] = [];
  const deadLetters: DeadLetter[] = [];
  const info: KinesisRecordInfo = { shardId, sequenceNumber: '', partitionKey: '', approximateArrivalTimestamp: Number.NaN };
  for (let i = 0; i < n; i++) {
    const r = records[i] as _Record;
    if (selection !== undefined) {
      const fate = selection.fate(r);
      if (fate === 'skip') continue;
      if (fate === 'foreign') {
        deadLetters.push(recordDeadLetter(r, stream, shardId, selection.foreignReason));
        continue;
      }
    }
    const data = r.Data ?? EMPTY;
    const arrival = r.ApproximateArrivalTimestamp?.getTime() ?? Number.NaN;
    info.sequenceNumber = r.SequenceNumber ?? '';
    info.partitionKey = r.PartitionKey ?? '';
    info.approximateArrivalTimestamp = arrival;
    let value: T;
    try {
      value = deserialize(data, info);
    } catch (error) {
      deadLetters.push(recordDeadLetter(r, stream, shardId, errorMessage(error)));
      continue;
    }
    values.push(value);
    timestamps.push(Number.isNaN(arrival) ? NO_TIMESTAMP : arrival);
    sequenceNumbers.push(info.sequenceNumber);
    decoded.push(r);
  }
  return {
    values,
    timestamps,
    sequenceNumbers,
    records: decoded,
    lastSequenceNumber: records[n - 1]?.SequenceNumber ?? '',
    deadLetters,
  };
}

/** A fetched record as a dead letter (its data in base64), rejected for `reason`. */
export function recordDeadLetter(r: _Record, stream: string, shardId: string, reason: string): DeadLetter {
  const data = r.Data ?? EMPTY;
  const arrival = r.ApproximateArrivalTimestamp?.getTime();
  return {
    source: stream,
    shardId,
    sequenceNumber: r.SequenceNumber ?? '',
    partitionKey: r.PartitionKey ?? '',
    approximateArrivalTimestamp: arrival === undefined || Number.isNaN(arrival) ? undefined : arrival,
    data: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64'),
    reason,
  };
}

const EMPTY = new Uint8Array(0);
