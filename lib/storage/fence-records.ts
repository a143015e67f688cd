import { FencedError, assertNotFenced, fencingTag, type FencingToken } from '../core/index.ts';
import { CheckpointIoError } from './errors.ts';
import type { ObjectStore } from './object-store.ts';

/** Folder of fence records under the storage root; not a checkpoint folder name, nor a valid job record name. */
export const FENCE_DIR = '_fence';
const FENCE_NAME = /^e(\d+)-a(\d+)$/;
/** Fence records kept below the current one: enough for a reader to see the order, few enough to list cheaply. */
const KEPT_BELOW = 2;

function parseFence(path: string): FencingToken | undefined {
  const m = FENCE_NAME.exec(path.slice(FENCE_DIR.length + 1));
  if (m === null) return undefined;
  const token = { epoch: Number(m[1]), attempt: Number(m[2]) };
  return Number.isSafeInteger(token.epoch) && Number.isSafeInteger(token.attempt) ? token : undefined;
}

function newest(tokens: readonly FencingToken[]): FencingToken | undefined {
  let best: FencingToken | undefined;
  for (const t of tokens) if (best === undefined || t.epoch > best.epoch || (t.epoch === best.epoch && t.attempt > best.attempt)) best = t;
  return best;
}

/**
 * The durable record of which fencing epoch owns a checkpoint location: one small object per raise,
 * `_fence/e<epoch>-a<attempt>`, created with create-if-absent, so raises never overwrite each other and the highest
 * epoch present is the current one whatever order concurrent raises land in. Reading it is one listing.
 */
export class FenceRecords {
  constructor(private readonly store: ObjectStore) {}

  /** The highest fencing token recorded, or undefined when no attempt has fenced this location yet. */
  async current(): Promise<FencingToken | undefined> {
    return newest(await this.all());
  }

  /**
   * Records `token` as the owner. FencedError (and nothing recorded) when a higher epoch is recorded already, also
   * when one lands while this raise is under way; raising the current epoch again is fine.
   */
  async raise(token: FencingToken, component: string): Promise<void> {
    const before = await this.all();
    assertNotFenced(component, newest(before), token);
    const path = `${FENCE_DIR}/${fencingTag(token)}`;
    try {
      await this.store.putIfAbsent(path, Buffer.from(`${JSON.stringify(token)}\n`, 'utf8'));
    } catch (cause) {
      throw new CheckpointIoError('record the fencing epoch in', this.store.describe(path), cause);
    }
    const after = await this.all();
    const winner = newest(after);
    if (winner !== undefined && winner.epoch > token.epoch) throw new FencedError(component, winner, token);
    const epochs = [...new Set(after.map((t) => t.epoch))].sort((a, b) => b - a);
    const floor = epochs[KEPT_BELOW] ?? -1;
    const stale = after.filter((t) => t.epoch <= floor).map((t) => `${FENCE_DIR}/${fencingTag(t)}`);
    if (stale.length > 0) {
      try {
        await this.store.delete(stale);
      } catch (cause) {
        throw new CheckpointIoError('prune old fencing records in', this.store.describe(FENCE_DIR), cause);
      }
    }
  }

  private async all(): Promise<FencingToken[]> {
    try {
      return (await this.store.list(FENCE_DIR)).map(parseFence).filter((t): t is FencingToken => t !== undefined);
    } catch (cause) {
      throw new CheckpointIoError('read the fencing records in', this.store.describe(FENCE_DIR), cause);
    }
  }
}
