import { ExchangeError } from './exchange-error.ts';
import { decodeFrame, type DataFrame, type ExchangeFrame, type MarkerFrame, type StartFrame } from './exchange-frames.ts';
import type { CompletedCheckpoint, ExchangeShardSnapshot, ProducerProgress, ReleasedBatch, ResumePosition } from './exchange-ports.ts';

/** Options of a receiver's shard state. */
export interface ShardReceiverOptions {
  /**
   * Bytes of frames held (waiting for a completed checkpoint) or released but not yet polled. Beyond it the receiver
   * stops buffering data frames: it keeps scanning the shard only for markers while a completed checkpoint still
   * waits for one, and otherwise pauses; once frames left the buffer and it is at most half full, it re-reads from
   * the first frame it let go.
   * @default 64 MiB
   */
  readonly maxBufferedBytes?: number;
}

export const DEFAULT_MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

interface HeldFrame {
  readonly epoch: number;
  readonly seq: number;
  readonly values: readonly unknown[];
  readonly timestamps: readonly number[];
  readonly bytes: number;
  readonly position: string;
}

interface ReleasedFrame extends HeldFrame {
  readonly track: Track;
}

interface PositionedMarker extends MarkerFrame {
  readonly position: string;
}

interface EpochSeq {
  readonly epoch: number;
  readonly seq: number;
}

/** What the receiver knows of one (edge, producer slot) in this shard. */
interface Track {
  readonly edge: string;
  readonly producer: number;
  /** Every frame at or below it (by epoch, then seq) was released or dropped: later copies are duplicates. */
  floor: EpochSeq;
  readonly held: Map<string, HeldFrame>;
  /** Markers of checkpoints not yet known to be completed, by `epoch:checkpoint`, with their positions. */
  readonly markers: Map<string, PositionedMarker>;
  /** Highest completed checkpoint whose marker (of the epoch that completed it) has been applied. */
  appliedCheckpoint: number;
  /** Lowest data frame let go while buffering was paused: no boundary may pass it before it is re-read. */
  skipped: EpochSeq | undefined;
}

const NONE: EpochSeq = { epoch: -1, seq: -1 };

function atOrBelow(a: EpochSeq, b: EpochSeq): boolean {
  return a.epoch < b.epoch || (a.epoch === b.epoch && a.seq <= b.seq);
}

/** Kinesis sequence numbers are decimal strings of up to 128 bits without leading zeros. */
export function comparePositions(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

function earlier(a: string | undefined, b: string): string {
  return a === undefined || comparePositions(b, a) < 0 ? b : a;
}

/**
 * The read-committed receiver of one exchange shard, as a state machine without I/O. The reader feeds it the
 * shard's records in stream order (`accept`), the worker tells it completed checkpoints, the consuming task takes
 * released records (`take`) and checkpoints it (`snapshot`). Rules, per (edge, producer):
 *
 * - a data frame at or below the floor is a duplicate or superseded: dropped; others are held;
 * - a marker (epoch e, checkpoint c, sent through n) releases e's held frames up to n once a completed checkpoint
 *   c' >= c names e as the producer slot's epoch (a zombie's markers name another epoch and release nothing);
 * - a start frame of epoch e' (restored from epoch e_r's state at a completed checkpoint, through n_r) releases
 *   e_r's frames up to n_r and drops everything older than e' beyond that: it will never be committed;
 * - frames are released in (epoch, seq) order, so a single (epoch, seq) per producer tells re-read duplicates.
 *
 * Every frame a producer epoch sends at or below a marker or the next epoch's start frame precedes it in the
 * shard (the sender writes markers only after its data is acknowledged), which is what makes the rules sound.
 */
export class ShardReceiver {
  readonly shardId: string;
  private readonly maxBufferedBytes: number;
  private readonly tracks = new Map<string, Track>();
  private readonly released: ReleasedFrame[] = [];
  private completed: CompletedCheckpoint | undefined;
  private bufferedBytes = 0;
  /** Set while data frames are let go for lack of room: the position of the first one. */
  private skipFrom: string | undefined;
  /** `bufferedBytes` when the first frame was let go. */
  private bytesWhenSkipping = 0;
  /** A position the reader will read from next (after a restore or a rewind), until it read something. */
  private readFrom: string | undefined;
  private lastRead: string | undefined;
  private duplicateFrames = 0;

  constructor(shardId: string, options: ShardReceiverOptions = {}, restored?: ExchangeShardSnapshot) {
    this.shardId = shardId;
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    if (!(this.maxBufferedBytes > 0)) throw new ExchangeError(`exchange receiver: maxBufferedBytes must be > 0, got ${this.maxBufferedBytes}`);
    if (restored !== undefined) {
      if (restored.shardId !== shardId) throw new ExchangeError(`exchange receiver of shard ${shardId} was given the state of shard ${restored.shardId}`);
      if (restored.resume !== undefined) {
        if ('at' in restored.resume) this.readFrom = restored.resume.at;
        else this.lastRead = restored.resume.after;
      }
      for (const p of restored.producers) {
        const track = this.track(p.edge, p.producer);
        track.floor = { epoch: p.epoch, seq: p.seq };
      }
    }
  }

  /** Where the reader should start: the restored position, or the trim horizon. */
  get startPosition(): ResumePosition | undefined {
    if (this.readFrom !== undefined) return { at: this.readFrom };
    return this.lastRead === undefined ? undefined : { after: this.lastRead };
  }

  /** One record of the shard, in stream order: its data and its sequence number. */
  accept(data: Uint8Array, position: string): void {
    this.acceptFrame(decodeFrame(data, `exchange shard ${this.shardId} record ${position}`), data.byteLength, position);
  }

  acceptFrame(frame: ExchangeFrame, bytes: number, position: string): void {
    this.readFrom = undefined;
    this.lastRead = position;
    const track = this.track(frame.edge, frame.producer);
    switch (frame.kind) {
      case 'data':
        this.onData(track, frame, bytes, position);
        return;
      case 'marker':
        this.onMarker(track, { ...frame, position });
        return;
      case 'start':
        this.onStart(track, frame);
        return;
    }
  }

  /** Idempotent; an older completion than the latest known changes nothing. */
  checkpointCompleted(completion: CompletedCheckpoint): void {
    if (this.completed !== undefined && completion.checkpointId <= this.completed.checkpointId) return;
    this.completed = completion;
    for (const track of this.tracks.values()) this.applyCompleted(track);
  }

  /** Released frames, oldest first, at most `max`. */
  take(max = Number.POSITIVE_INFINITY): ReleasedBatch[] {
    const n = Math.min(max, this.released.length);
    const out: ReleasedBatch[] = [];
    for (const frame of this.released.splice(0, n)) {
      const track = frame.track;
      this.bufferedBytes -= frame.bytes;
      out.push({ edge: track.edge, producer: track.producer, values: frame.values, timestamps: frame.timestamps });
    }
    return out;
  }

  get hasReleased(): boolean {
    return this.released.length > 0;
  }

  /** Bytes held or released and not yet taken. */
  get buffered(): number {
    return this.bufferedBytes;
  }

  /** Frames dropped as duplicates or superseded so far (for metrics and tests). */
  get dropped(): number {
    return this.duplicateFrames;
  }

  /**
   * The buffer is full and no completed checkpoint waits for a marker further on: reading more would only be
   * thrown away. The reader stops until a completion or a `take` changes that.
   */
  get paused(): boolean {
    return this.skipFrom !== undefined && !this.awaitingMarkers();
  }

  /**
   * Where to re-read from, once data frames were let go and there is room again; then call `rewind`. While markers
   * further on can still release held frames, scanning goes on first (going back early could fill the buffer with
   * the same frames again and again), unless the reader is `caughtUp` with the end of the shard.
   */
  rewindPosition(caughtUp = false): string | undefined {
    if (this.skipFrom === undefined) return undefined;
    // Going back before anything left the buffer would only let go of the same frames again.
    const room = this.bufferedBytes <= this.maxBufferedBytes / 2 && this.bufferedBytes < this.bytesWhenSkipping;
    return room && (caughtUp || !this.awaitingMarkers()) ? this.skipFrom : undefined;
  }

  /** The reader goes back to `rewindPosition()`: frames from there on arrive again and are buffered. */
  rewind(): string {
    const at = this.skipFrom;
    if (at === undefined) throw new ExchangeError(`exchange shard ${this.shardId}: rewind without frames to re-read`);
    this.skipFrom = undefined;
    this.readFrom = at;
    for (const track of this.tracks.values()) {
      track.skipped = undefined;
      // Markers from there on come again after the frames they cover; kept now, a completion could apply one early.
      for (const [key, marker] of track.markers) if (comparePositions(marker.position, at) >= 0) track.markers.delete(key);
    }
    return at;
  }

  snapshot(): ExchangeShardSnapshot {
    let at = this.skipFrom ?? this.readFrom;
    for (const frame of this.released) at = earlier(at, frame.position);
    const producers: ProducerProgress[] = [];
    // Released frames leave in (epoch, seq) order: every frame below a track's first unpolled one was delivered or
    // dropped. Recording just below it, not the last delivered, keeps a passed epoch change: restored with the older
    // epoch and reading on after the start frame, a zombie's frames of that epoch would wait for a boundary forever.
    const firstUnpolled = new Map<Track, ReleasedFrame>();
    for (const frame of this.released) if (!firstUnpolled.has(frame.track)) firstUnpolled.set(frame.track, frame);
    for (const track of this.tracks.values()) {
      for (const frame of track.held.values()) at = earlier(at, frame.position);
      const next = firstUnpolled.get(track);
      const through = next !== undefined ? { epoch: next.epoch, seq: next.seq - 1 } : track.floor;
      if (through.epoch >= 0) producers.push({ edge: track.edge, producer: track.producer, epoch: through.epoch, seq: through.seq });
    }
    const resume: ResumePosition | undefined = at !== undefined ? { at } : this.lastRead !== undefined ? { after: this.lastRead } : undefined;
    return { shardId: this.shardId, ...(resume === undefined ? {} : { resume }), producers };
  }

  private track(edge: string, producer: number): Track {
    const key = `${edge}\u0000${producer}`;
    let track = this.tracks.get(key);
    if (track === undefined) {
      track = { edge, producer, floor: NONE, held: new Map(), markers: new Map(), appliedCheckpoint: -1, skipped: undefined };
      this.tracks.set(key, track);
    }
    return track;
  }

  private onData(track: Track, frame: DataFrame, bytes: number, position: string): void {
    const key = `${frame.epoch}:${frame.seq}`;
    if (atOrBelow(frame, track.floor) || track.held.has(key)) {
      this.duplicateFrames++;
      return;
    }
    // An empty buffer always takes one frame, so a frame larger than the limit still gets through.
    if (this.skipFrom !== undefined || (this.bufferedBytes > 0 && this.bufferedBytes + bytes > this.maxBufferedBytes)) {
      if (this.makeRoomBelow(track, frame, bytes)) {
        this.hold(track, key, frame, bytes, position);
        return;
      }
      if (this.skipFrom === undefined) this.bytesWhenSkipping = this.bufferedBytes;
      this.skipFrom = earlier(this.skipFrom, position);
      if (track.skipped === undefined || atOrBelow(frame, track.skipped)) track.skipped = { epoch: frame.epoch, seq: frame.seq };
      return;
    }
    this.hold(track, key, frame, bytes, position);
  }

  private hold(track: Track, key: string, frame: DataFrame, bytes: number, position: string): void {
    track.held.set(key, { epoch: frame.epoch, seq: frame.seq, values: frame.values, timestamps: frame.timestamps, bytes, position });
    this.bufferedBytes += bytes;
  }

  /**
   * A full buffer lets go of the track's highest held frames, not of a lower one arriving after them: frames are
   * released in seq order, so a boundary stops at the lowest frame let go. Letting go of the lowest instead could
   * repeat forever when the shard has a producer's frames reordered (s3, s1, s2, s0) and only three fit: each
   * re-read holds the same three, lets s0 go again, and nothing is ever released. Returns whether the frame now fits.
   */
  private makeRoomBelow(track: Track, frame: DataFrame, bytes: number): boolean {
    // A lower frame of the track is already let go: a boundary stops there, this frame would not be released either.
    if (track.skipped !== undefined && atOrBelow(track.skipped, frame)) return false;
    const above = [...track.held.entries()].filter(([, held]) => !atOrBelow(held, frame));
    above.sort(([, a], [, b]) => (atOrBelow(a, b) ? 1 : -1));
    // As when reading on, an empty buffer takes any one frame.
    const fits = (left: number): boolean => left === 0 || left + bytes <= this.maxBufferedBytes;
    let left = this.bufferedBytes;
    let n = 0;
    while (n < above.length && !fits(left)) left -= above[n++]![1].bytes;
    // While frames are being let go, one that fits is still held when no lower frame of its track was let go:
    // otherwise a lower frame arriving after a let-go higher one never gets in, and each re-read repeats the pattern.
    if (!fits(left)) return false;
    // Going back is worth it only once something left the buffer after this exchange.
    if (this.skipFrom === undefined) this.bytesWhenSkipping = left + bytes;
    for (const [key, held] of above.slice(0, n)) {
      track.held.delete(key);
      if (track.skipped === undefined || atOrBelow(held, track.skipped)) track.skipped = { epoch: held.epoch, seq: held.seq };
      this.skipFrom = earlier(this.skipFrom, held.position);
    }
    this.bufferedBytes = left;
    return true;
  }

  private onMarker(track: Track, marker: PositionedMarker): void {
    if (marker.epoch < track.floor.epoch) return;
    if (this.completed !== undefined && marker.checkpointId <= this.completed.checkpointId && marker.epoch !== this.completed.slotEpochs[track.producer]) return;
    track.markers.set(`${marker.epoch}:${marker.checkpointId}`, marker);
    this.applyCompleted(track);
  }

  private onStart(track: Track, start: StartFrame): void {
    if (start.epoch <= track.floor.epoch) return;
    // The restored checkpoint is completed, so its epoch's frames up to the snapshot are committed.
    const committed = start.from === undefined ? undefined : { epoch: start.from.epoch, seq: start.from.sentThrough };
    if (committed !== undefined) this.applyBoundary(track, committed);
    // Only a let-go frame the restored checkpoint may have committed holds the floor back: one above that boundary
    // (or any, after a fresh start) will never be committed, and waiting for it to be re-read would stop the floor for good (the next boundary
    // would be cut at it, re-reading lets go of it again, and so on).
    if (track.skipped !== undefined && track.skipped.epoch < start.epoch && committed !== undefined && atOrBelow(track.skipped, committed)) {
      // Committed frames of an older epoch may not be back yet after a pause: the floor stays until they are, but
      // what this frame proves uncommitted can go now (which makes room to go back for the rest).
      for (const [key, frame] of track.held) {
        if (frame.epoch >= start.epoch || (committed !== undefined && frame.epoch === committed.epoch && frame.seq <= committed.seq)) continue;
        track.held.delete(key);
        this.bufferedBytes -= frame.bytes;
        this.duplicateFrames++;
      }
      return;
    }
    this.advanceFloor(track, { epoch: start.epoch, seq: -1 });
  }

  /** Applies the newest marker the latest completed checkpoint vouches for, and forgets markers it supersedes. */
  private applyCompleted(track: Track): void {
    const completed = this.completed;
    if (completed === undefined) return;
    const epoch = completed.slotEpochs[track.producer];
    let best: MarkerFrame | undefined;
    for (const [key, marker] of track.markers) {
      if (marker.checkpointId > completed.checkpointId && marker.epoch >= track.floor.epoch) continue;
      track.markers.delete(key);
      if (marker.epoch === epoch && marker.checkpointId <= completed.checkpointId && (best === undefined || marker.sentThrough > best.sentThrough)) best = marker;
    }
    if (best === undefined) return;
    // Cut short by a let-go frame, the marker (which follows that frame) is read again after the rewind.
    if (this.applyBoundary(track, { epoch: best.epoch, seq: best.sentThrough })) track.appliedCheckpoint = Math.max(track.appliedCheckpoint, best.checkpointId);
  }

  /**
   * Releases `boundary.epoch`'s held frames up to `boundary` and drops held frames of older epochs. Returns whether
   * the whole boundary was applied (not cut short by a frame let go while buffering was paused).
   */
  private applyBoundary(track: Track, boundary: EpochSeq): boolean {
    if (atOrBelow(boundary, track.floor)) return true;
    let target = boundary;
    const skipped = track.skipped;
    if (skipped !== undefined && atOrBelow(skipped, boundary)) {
      // A frame the boundary covers was let go: release only below it, and let go of the held frames above it
      // that the boundary also covers, so that the buffer drains and the reader comes back for all of them in order.
      this.evictFrom(track, skipped, boundary);
      if (skipped.epoch < boundary.epoch) return false;
      target = { epoch: boundary.epoch, seq: skipped.seq - 1 };
      if (atOrBelow(target, track.floor)) return false;
    }
    this.advanceFloor(track, target);
    return target === boundary;
  }

  private evictFrom(track: Track, from: EpochSeq, through: EpochSeq): void {
    for (const [key, frame] of track.held) {
      if (!atOrBelow(from, frame) || !atOrBelow(frame, through)) continue;
      track.held.delete(key);
      this.bufferedBytes -= frame.bytes;
      if (this.skipFrom === undefined) this.bytesWhenSkipping = this.bufferedBytes + frame.bytes;
      this.skipFrom = earlier(this.skipFrom, frame.position);
    }
  }

  /** Moves the floor up: held frames of the floor's epoch up to it are released in seq order, older ones dropped. */
  private advanceFloor(track: Track, floor: EpochSeq): void {
    const release: HeldFrame[] = [];
    for (const [key, frame] of track.held) {
      if (!atOrBelow(frame, floor)) continue;
      track.held.delete(key);
      if (frame.epoch === floor.epoch) {
        release.push(frame);
      } else {
        this.bufferedBytes -= frame.bytes;
        this.duplicateFrames++;
      }
    }
    release.sort((a, b) => a.seq - b.seq);
    for (const frame of release) this.released.push({ ...frame, track });
    track.floor = floor;
    // A let-go frame below the floor is superseded: re-read, it is dropped, so no boundary has to wait for it.
    for (const [key, marker] of track.markers) if (marker.epoch < floor.epoch) track.markers.delete(key);
  }

  /** Some held frames wait for a marker or start frame that a known completed checkpoint makes decisive. */
  private awaitingMarkers(): boolean {
    const completed = this.completed;
    if (completed === undefined) return false;
    for (const track of this.tracks.values()) {
      if (track.held.size === 0) continue;
      const epoch = completed.slotEpochs[track.producer];
      if (epoch === undefined) continue;
      if (epoch > track.floor.epoch || (epoch === track.floor.epoch && track.appliedCheckpoint < completed.checkpointId)) return true;
    }
    return false;
  }
}
