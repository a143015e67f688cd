/**
 * A record a source could not turn into a value (its deserializer threw), kept with everything needed to find,
 * inspect and replay it.
 */
export interface DeadLetter {
  /** The stream (name or ARN) the record came from. */
  readonly source: string;
  readonly shardId: string;
  readonly sequenceNumber: string;
  readonly partitionKey: string;
  /** Kinesis's ApproximateArrivalTimestamp, epoch ms. */
  readonly approximateArrivalTimestamp: number | undefined;
  /** The record's data, base64. */
  readonly data: string;
  /** Why it was rejected (the deserializer's error message). */
  readonly reason: string;
}

/**
 * Where dead letters go (a Kinesis stream, an S3 prefix...). The source awaits `write` before it moves past the
 * letters' records, so a letter is never lost; after a restart from an earlier checkpoint it may be written again
 * (at least once). Called by one reader at a time; a writer shared by several readers must allow concurrent calls.
 */
export interface DeadLetterWriter {
  write(letters: readonly DeadLetter[]): Promise<void>;
  close?(): void | Promise<void>;
}

/** The JSON form of a letter, one object per letter (stable field order, for JSON Lines files and stream records). */
export function deadLetterJson(letter: DeadLetter, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    source: letter.source,
    shardId: letter.shardId,
    sequenceNumber: letter.sequenceNumber,
    partitionKey: letter.partitionKey,
    approximateArrivalTimestamp: letter.approximateArrivalTimestamp,
    reason: letter.reason,
    data: letter.data,
    ...extra,
  });
}
