import { AUCTION, PERSON, type NexmarkEvent } from '../model.ts';
import { Q8_WINDOW_MS, type NewSeller } from '../queries/q8.ts';
import type { Baseline, BaselineFactory } from './baseline.ts';

interface Window {
  /** Person id -> name, for the persons who registered in the window. */
  readonly persons: Map<number, string>;
  /** Sellers of the auctions opened in the window. */
  readonly sellers: Set<number>;
}

/**
 * q8 by hand: per 10 s tumbling window, the persons who registered and the sellers of the auctions opened in it;
 * when the watermark closes the window, each person who is also a seller in it is emitted once. Person ids are
 * unique (one registration each), so a Map by id is the reference's GROUP BY (id, name).
 */
class NewUsers implements Baseline<NewSeller> {
  private readonly windows = new Map<number, Window>();
  private watermark = Number.NEGATIVE_INFINITY;

  processBatch(events: readonly NexmarkEvent[]): void {
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      if (e.kind !== PERSON && e.kind !== AUCTION) continue;
      const start = e.dateTime - (e.dateTime % Q8_WINDOW_MS);
      let window = this.windows.get(start);
      if (window === undefined) {
        // Late for its window (it has fired): dropped, as the window join drops it.
        if (start + Q8_WINDOW_MS - 1 <= this.watermark) continue;
        this.windows.set(start, (window = { persons: new Map(), sellers: new Set() }));
      }
      if (e.kind === PERSON) window.persons.set(e.id, e.name);
      else window.sellers.add(e.seller);
    }
  }

  advanceWatermark(watermark: number, out: NewSeller[]): void {
    this.watermark = watermark;
    for (const [starttime, window] of this.windows) {
      if (starttime + Q8_WINDOW_MS - 1 > watermark) continue;
      for (const [id, name] of window.persons) if (window.sellers.has(id)) out.push({ id, name, starttime });
      this.windows.delete(starttime);
    }
  }
}

export const q8Baseline: BaselineFactory<NewSeller> = () => new NewUsers();
