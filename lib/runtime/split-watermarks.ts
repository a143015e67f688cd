import type { RecordBatch } from '../core/index.ts';
import { assignTimestamps, type InvalidTimestamp } from '../operators/basic/assign-timestamps.ts';
import type { WatermarkGenerator, WatermarkStrategy } from '../contracts/watermark-strategy.ts';

export interface SplitWatermarksSnapshot {
  readonly emitted: number;
  readonly splits: [id: string, generatorState: unknown, finished: boolean][];
}

interface SplitState {
  generator: WatermarkGenerator<unknown>;
  lastRecordAt: number;
  /** Since when the reader has said, without a break, that the split has no data available; undefined: it has not. */
  caughtUpSince: number | undefined;
  idle: boolean;
  finished: boolean;
  /** Paused by watermark alignment: not read, yet not idle (its data is waiting, not missing). */
  paused: boolean;
  /** The reader had no data for it at the last poll (caught up): alignment does not wait for it. */
  caughtUp: boolean;
}

/**
 * Per-split timestamps and watermarks inside a source subtask (ARCHITECTURE.md §3): each split has its own
 * generator, and the subtask's watermark is the minimum over splits that have started and are neither idle nor
 * finished. A split that has not produced a record yet does not hold the watermark back, as in a reader that is
 * assigned splits one after the other.
 */
export class SplitWatermarks {
  private readonly splits = new Map<string, SplitState>();
  private emitted = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly strategy: WatermarkStrategy<unknown>,
    private readonly operatorName: string,
    private readonly subtask: number,
    private readonly startedAt: number,
  ) {}

  private state(id: string, now: number): SplitState {
    let s = this.splits.get(id);
    if (s === undefined) {
      s = { generator: this.strategy.createGenerator(), lastRecordAt: now, caughtUpSince: undefined, idle: false, finished: false, paused: false, caughtUp: false };
      this.splits.set(id, s);
    }
    return s;
  }

  /**
   * Assigns timestamps (when the strategy has an assigner) and feeds the split's generator. Records with an
   * invalid timestamp are left out of the result and passed to `onInvalid`.
   */
  onBatch(
    batch: RecordBatch<unknown> & { split: string },
    now: number,
    onInvalid: (invalid: InvalidTimestamp) => void,
  ): RecordBatch<unknown> {
    const s = this.state(batch.split, now);
    s.lastRecordAt = now;
    s.caughtUpSince = undefined;
    s.idle = false;
    s.caughtUp = false;
    return assignTimestamps(batch, this.strategy.timestampAssigner, s.generator, this.operatorName, this.subtask, onInvalid);
  }

  /** Plain data: per split, the generator's state and whether it finished; and the last emitted watermark. */
  snapshot(): SplitWatermarksSnapshot {
    return {
      emitted: this.emitted,
      splits: [...this.splits.entries()].map(([id, s]) => [id, s.generator.snapshotState?.(), s.finished]),
    };
  }

  /**
   * Continues from snapshots of one or more earlier subtasks (after rescaling, several): owned splits get their
   * generator state back; the emitted watermark is the lowest of them, so it never runs ahead of any split.
   */
  restore(snapshots: readonly SplitWatermarksSnapshot[], ownedSplits: ReadonlySet<string>): void {
    let emitted = Number.POSITIVE_INFINITY;
    for (const snap of snapshots) {
      emitted = Math.min(emitted, snap.emitted);
      for (const [id, generatorState, finished] of snap.splits) {
        if (!ownedSplits.has(id)) continue;
        const s = this.state(id, this.startedAt);
        if (generatorState !== undefined) s.generator.restoreState?.(generatorState);
        s.finished = finished;
      }
    }
    if (snapshots.length > 0) this.emitted = emitted;
  }

  /** Splits read concurrently hold the watermark back from the start (see Source.concurrentSplits). */
  register(splitIds: Iterable<string>, now: number): void {
    for (const id of splitIds) this.state(id, now);
  }

  markFinished(splitId: string): void {
    const s = this.splits.get(splitId);
    if (s !== undefined) s.finished = true;
  }

  /** The last watermark emitted: the subtask's watermark as downstream operators see it. */
  get watermark(): number {
    return this.emitted;
  }

  /** Watermark of each split that is neither idle nor finished (what watermark alignment compares). */
  activeWatermarks(): Map<string, number> {
    const active = new Map<string, number>();
    for (const [id, s] of this.splits) {
      if (!s.finished && !s.idle) active.set(id, s.generator.currentWatermark());
    }
    return active;
  }

  /**
   * Watermark alignment paused or resumed these splits (all of them when `ids` is undefined). A resumed split's
   * idle timeout starts again: the time it spent paused was not a time without data.
   */
  setPaused(ids: Iterable<string> | undefined, paused: boolean, now: number): void {
    for (const id of ids ?? this.splits.keys()) {
      const s = this.splits.get(id);
      if (s === undefined) continue;
      s.paused = paused;
      if (!paused) {
        s.lastRecordAt = now;
        s.caughtUp = false;
      }
    }
  }

  /**
   * The reader has no data for these splits right now (all splits that are not paused, when `ids` is undefined);
   * they count again once they have records.
   */
  markCaughtUp(ids: Iterable<string> | undefined): void {
    // A listed reader says exactly which splits have no data: one it no longer lists is behind again.
    const listed = ids === undefined ? undefined : new Set(ids);
    for (const [id, s] of this.splits) {
      if (!s.paused) s.caughtUp = listed === undefined || listed.has(id);
    }
  }

  /**
   * Before the watermark advances on a batch of another split: an idle split whose reader has data for it again
   * (not caught up any more) holds the watermark back again, so its records are not late when they come.
   */
  wakeIdle(caughtUp: (splitId: string) => boolean): void {
    for (const [id, s] of this.splits) {
      if (s.idle && !s.paused && !s.finished && !caughtUp(id)) {
        s.idle = false;
        s.caughtUpSince = undefined;
      }
    }
  }

  /**
   * What this subtask tells its alignment group: the lowest watermark of its splits that have data to read (not
   * idle, finished or caught up); undefined when none has. A split without data is not waited for: waiting cannot
   * make it progress, and every split paused behind it would wait forever (a bounded job would never end).
   */
  alignmentWatermark(): number | undefined {
    let min: number | undefined;
    for (const s of this.splits.values()) {
      if (s.finished || s.idle || s.caughtUp) continue;
      const wm = s.generator.currentWatermark();
      if (min === undefined || wm < min) min = wm;
    }
    return min;
  }

  /**
   * Updates which splits are idle and returns true if every open split is. A split is idle only once its reader
   * has said for the whole idle timeout that it has no data available (`caughtUp`) and no record came: a split
   * that is behind, still waiting for its first answer or being retried never goes idle however long that takes,
   * since its records would then be late when they come. An idle split that is no longer caught up holds the
   * watermark back again before its records arrive. A split paused by watermark alignment is not idle: its data is
   * waiting, not missing.
   */
  checkIdle(now: number, caughtUp: (splitId: string) => boolean): boolean {
    const timeout = this.strategy.idleTimeoutMs;
    let open = 0;
    let idle = 0;
    for (const [id, s] of this.splits) {
      if (s.finished) continue;
      open++;
      if (s.paused) {
        s.caughtUpSince = undefined;
      } else if (caughtUp(id)) {
        s.caughtUpSince ??= now;
        if (timeout !== undefined && now - Math.max(s.caughtUpSince, s.lastRecordAt) >= timeout) s.idle = true;
      } else {
        s.caughtUpSince = undefined;
        s.idle = false;
      }
      if (s.idle) idle++;
    }
    // A subtask that has read nothing at all is idle once the timeout passes (e.g. more subtasks than splits).
    if (open === 0) return timeout !== undefined && now - this.startedAt >= timeout && this.splits.size === 0;
    return idle === open;
  }

  /** The combined watermark if it advanced since the last call, else undefined. */
  advance(): number | undefined {
    let min = Number.POSITIVE_INFINITY;
    let active = 0;
    for (const s of this.splits.values()) {
      if (s.finished || s.idle) continue;
      active++;
      const wm = s.generator.currentWatermark();
      if (wm < min) min = wm;
    }
    if (active === 0) return undefined;
    if (min > this.emitted) {
      this.emitted = min;
      return min;
    }
    return undefined;
  }
}
