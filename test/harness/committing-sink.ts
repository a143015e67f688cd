import { fencingTag } from '../../lib/core/index.ts';
import type { TwoPhaseCommitSink } from '../../lib/connectors/sink.ts';

/**
 * Exactly-once test sink: each prepared transaction is committed at most once, by id (attempt/subtask/checkpoint),
 * into `committed`; transactions that are never committed are dropped, as a restart discards them.
 */
export function committingSink<T>(committed: Map<string, T[]>): TwoPhaseCommitSink<T, { id: string; rows: T[] }> {
  return {
    name: 'committing',
    twoPhaseCommit: true,
    createWriter(ctx) {
      let open: T[] = [];
      return {
        write(batch) {
          open.push(...batch.values);
        },
        prepareCommit(checkpointId) {
          const txn = { id: `${ctx.fencing === undefined ? 'none' : fencingTag(ctx.fencing)}/${ctx.subtask}/${checkpointId}`, rows: open };
          open = [];
          return txn.rows.length > 0 ? [txn] : [];
        },
      };
    },
    createCommitter: () => ({
      commit(committables) {
        for (const c of committables) if (!committed.has(c.id)) committed.set(c.id, c.rows);
      },
    }),
    cleanUpDangling() {},
  };
}
