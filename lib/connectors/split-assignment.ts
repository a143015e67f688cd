import { ConfigError } from '../core/index.ts';
import type { Source, SourceSplit } from './source.ts';

/**
 * The splits of `splits` that subtask `subtask` of `parallelism` reads: the source's own `subtaskOf` when it has
 * one (sources that discover splits while running need every split to have one fixed owner), else round-robin.
 */
export function splitsOfSubtask<S extends SourceSplit>(
  source: Pick<Source<unknown, S>, 'subtaskOf' | 'name'>,
  splits: readonly S[],
  parallelism: number,
  subtask: number,
): S[] {
  const ownerOf = source.subtaskOf;
  if (ownerOf === undefined) return splits.filter((_, i) => i % parallelism === subtask);
  return splits.filter((split) => {
    const owner = ownerOf.call(source, split, parallelism);
    if (!Number.isInteger(owner) || owner < 0 || owner >= parallelism) {
      throw new ConfigError(
        `source "${source.name}" assigned split "${split.id}" to subtask ${owner}, outside 0..${parallelism - 1}: its subtaskOf must return an integer in that range`,
      );
    }
    return owner === subtask;
  });
}
