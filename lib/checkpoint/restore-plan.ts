import { ConfigError } from '../core/index.ts';

/** A committed checkpoint that cannot be restored, and why. */
export interface CorruptCheckpoint {
  readonly checkpointId: number;
  readonly reason: string;
}

/** Where a restore would start once the corrupt checkpoints are passed over. */
export type RestoreStart =
  /** An older complete checkpoint of the same folder. */
  | { readonly kind: 'checkpoint'; readonly checkpointId: number }
  /** The savepoint (or outside checkpoint) the folder's job was restored from, as restore.json records. */
  | { readonly kind: 'savepoint'; readonly description: string }
  /** No state at all: the sources read from their beginning. */
  | { readonly kind: 'beginning' };

export interface RestorePlanInput {
  /** The checkpoint folder, for messages. */
  readonly location: string;
  /** Committed checkpoints found corrupt, newer than `start` (any order). */
  readonly corrupt: readonly CorruptCheckpoint[];
  /**
   * Checkpoints at or below this id predate a restore from a savepoint (restore.json's floor): their output is not
   * this job's, so passing over them replays nothing. @default 0
   */
  readonly floor?: number;
  readonly start: RestoreStart;
  /** `--allow-replay`: the user accepts falling back to an older checkpoint or savepoint. */
  readonly allowReplay: boolean;
}

/** What the restore does, when it may go ahead. */
export interface RestorePlan {
  /** Lines to log (a fallback accepted with `--allow-replay`). */
  readonly warnings: string[];
}

/**
 * Decides whether a job may start from `start` although newer committed checkpoints are corrupt. A committed
 * checkpoint's sinks committed its output when it completed, so starting from anything older writes that output
 * again: refused (ConfigError, exit 2) unless the user passes `--allow-replay`. Starting from the beginning while
 * checkpoints exist is refused even then: only `--fresh` (which discards them) does that.
 */
export function planRestore(input: RestorePlanInput): RestorePlan {
  const floor = input.floor ?? 0;
  const corrupt = input.corrupt.filter((c) => c.checkpointId > floor).sort((a, b) => a.checkpointId - b.checkpointId);
  if (corrupt.length === 0) return { warnings: [] };
  const ids = corrupt.map((c) => c.checkpointId);
  const which = `${corrupt.length === 1 ? 'checkpoint' : 'checkpoints'} ${idRange(ids)}`;
  const reasons = corrupt.map((c) => `  checkpoint ${c.checkpointId}: ${c.reason}`).join('\n');
  const found = `${which} in ${input.location} ${corrupt.length === 1 ? 'is' : 'are'} corrupt:\n${reasons}\n`;
  if (input.start.kind === 'beginning') {
    throw new ConfigError(
      `${found}no complete checkpoint is left to restore from: starting anyway would start from the beginning and ` +
        `write again all output committed by ${which}. Start over on purpose with --fresh (discards the folder's ` +
        'checkpoints), or restore a savepoint with --restore',
    );
  }
  const fallback =
    input.start.kind === 'checkpoint' ? `checkpoint ${input.start.checkpointId}` : `${input.start.description} (restore.json)`;
  const replay = `falling back to ${fallback} would replay the output committed by ${which}`;
  if (!input.allowReplay) {
    throw new ConfigError(
      `${found}${replay}, so the sinks would receive it twice. Pass --allow-replay to fall back anyway, ` +
        'or --fresh to start over from the beginning',
    );
  }
  return { warnings: [`warning: --allow-replay: ${which} corrupt; ${replay} (duplicates in the output)`] };
}

/** `12`, `12..14` for consecutive ids, else `12, 14`. */
function idRange(ids: readonly number[]): string {
  const first = ids[0]!;
  const last = ids[ids.length - 1]!;
  if (ids.length > 2 && last - first === ids.length - 1) return `${first}..${last}`;
  return ids.join(', ');
}
