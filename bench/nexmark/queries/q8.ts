import { TumblingEventTimeWindows } from 'sluice';
import type { NexmarkQuery } from './query.ts';
import { auctions, persons } from './event-streams.ts';

/** A person who registered and opened an auction in the same 10 s window. */
export interface NewSeller {
  readonly id: number;
  readonly name: string;
  /** Start of the window (the reference's TUMBLE_START), epoch ms. */
  readonly starttime: number;
}

/** The reference's TUMBLE(dateTime, INTERVAL '10' SECOND). */
export const Q8_WINDOW_MS = 10_000;

interface NewPerson {
  readonly id: number;
  readonly name: string;
}

/**
 * Monitor new users (the Flink suite's q8.sql): persons grouped by (id, name) per 10 s tumbling window, joined on
 * `P.id = A.seller` and the same window with the sellers of that window's auctions; output `P.id, P.name,
 * P.starttime`. A window join keeps each window's persons and sellers per key and, when the window fires, emits
 * each distinct (id, name) once if the key has an auction in it — the GROUP BYs of both sides make the reference
 * emit one row per person and window however many auctions there were.
 */
export const q8: NexmarkQuery<NewSeller> = {
  name: 'q8',
  title: 'Monitor New Users',
  description: `persons who registered and opened an auction in the same ${Q8_WINDOW_MS / 1000} s tumbling window`,
  build: (events) => {
    const newPersons = persons(events).map((p): NewPerson => ({ id: p.id, name: p.name }), 'q8: person columns');
    const sellers = auctions(events).map((a) => a.seller, 'q8: sellers');
    return newPersons
      .join(sellers)
      .where((p) => p.id)
      .equalTo((seller) => seller)
      .window(TumblingEventTimeWindows.of(Q8_WINDOW_MS))
      .process<NewSeller>(
        {
          process(_id, ctx, people, _sellers, out) {
            const starttime = ctx.window.start;
            const first = people[0] as NewPerson;
            // Person ids are unique, so one (id, name) is the rule; repeats of one name collapse as in GROUP BY.
            if (people.length === 1) {
              out.collect({ id: first.id, name: first.name, starttime });
              return;
            }
            const names = new Set<string>();
            for (const p of people) {
              if (names.has(p.name)) continue;
              names.add(p.name);
              out.collect({ id: p.id, name: p.name, starttime });
            }
          },
        },
        'q8: join',
      );
  },
};
