import { BID, type NexmarkEvent } from '../model.ts';
import { Q11_GAP_MS, type BidderCount } from '../queries/q11.ts';
import type { Baseline, BaselineFactory } from './baseline.ts';
import { TimerHeap } from './timer-heap.ts';

interface Session {
  start: number;
  /** Last bid + the gap (exclusive). */
  end: number;
  count: number;
}

interface Bidder {
  /** Open sessions, by start; disjoint and not touching (nearly always just one). */
  readonly sessions: Session[];
  /** Time of this bidder's live heap entry: at most the end of its first session. */
  scheduled: number;
}

/**
 * q11 by hand: per bidder, open sessions as [first bid, last bid + 10 s); a bid whose own [t, t + 10 s) touches a
 * session joins it (and may bridge two), as the session window merges windows. Sessions close when the watermark
 * passes their end - 1: one heap entry per bidder, at its first session's end when pushed; an entry whose session
 * has grown since is pushed again later instead of being updated on every bid.
 */
class UserSessions implements Baseline<BidderCount> {
  private readonly bidders = new Map<number, Bidder>();
  private readonly timers = new TimerHeap();
  private watermark = Number.NEGATIVE_INFINITY;

  processBatch(events: readonly NexmarkEvent[]): void {
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (e.kind !== BID) continue;
      const t = e.dateTime;
      const end = t + Q11_GAP_MS;
      // Late (its own window has passed the watermark): dropped, as the window operator drops it.
      if (end - 1 <= this.watermark) continue;
      const bidder = this.bidders.get(e.bidder);
      if (bidder === undefined) {
        this.bidders.set(e.bidder, { sessions: [{ start: t, end, count: 1 }], scheduled: end });
        this.timers.push(end, e.bidder);
        continue;
      }
      const sessions = bidder.sessions;
      const only = sessions.length === 1 ? sessions[0]! : undefined;
      if (only !== undefined && t <= only.end && end >= only.start) {
        only.count++;
        if (t < only.start) only.start = t;
        if (end > only.end) only.end = end;
      } else {
        this.merge(e.bidder, bidder, t, end);
      }
    }
  }

  /** The general case: the new window joins every session it touches, or becomes a session of its own. */
  private merge(id: number, bidder: Bidder, start: number, end: number): void {
    const sessions = bidder.sessions;
    const merged: Session = { start, end, count: 1 };
    let at = 0;
    const kept: Session[] = [];
    for (const s of sessions) {
      if (s.start <= merged.end && s.end >= merged.start) {
        merged.start = Math.min(merged.start, s.start);
        merged.end = Math.max(merged.end, s.end);
        merged.count += s.count;
      } else {
        kept.push(s);
        if (s.start < merged.start) at = kept.length;
      }
    }
    kept.splice(at, 0, merged);
    sessions.length = 0;
    sessions.push(...kept);
    const first = (sessions[0] as Session).end;
    if (first < bidder.scheduled) {
      bidder.scheduled = first;
      this.timers.push(first, id);
    }
  }

  advanceWatermark(watermark: number, out: BidderCount[]): void {
    this.watermark = watermark;
    const timers = this.timers;
    while (timers.size > 0 && timers.peekTime() - 1 <= watermark) {
      const time = timers.peekTime();
      const id = timers.pop();
      const bidder = this.bidders.get(id);
      if (bidder === undefined || bidder.scheduled !== time) continue; // superseded by an earlier entry
      const sessions = bidder.sessions;
      let closed = 0;
      while (closed < sessions.length && sessions[closed]!.end - 1 <= watermark) {
        const s = sessions[closed++]!;
        out.push({ bidder: id, bidCount: s.count, starttime: s.start, endtime: s.end });
      }
      if (closed === sessions.length) {
        this.bidders.delete(id);
        continue;
      }
      if (closed > 0) sessions.splice(0, closed);
      bidder.scheduled = sessions[0]!.end;
      timers.push(bidder.scheduled, id);
    }
  }
}

export const q11Baseline: BaselineFactory<BidderCount> = () => new UserSessions();
