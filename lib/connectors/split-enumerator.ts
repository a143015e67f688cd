import type { Source, SourceSplit } from './source.ts';
import { splitsOfSubtask } from './split-assignment.ts';

/**
 * Decides which splits a source subtask reads. The subtask asks as it starts (when it has no restored splits of
 * its own), so a deployment may answer from elsewhere: the embedded runners from a list computed once, a cluster
 * from a coordinator that hands splits out as workers come and go.
 */
export interface SplitEnumerator {
  /** The splits subtask `subtask` of source vertex `vertex` reads from the beginning. */
  assignedSplits(vertex: number, subtask: number): Promise<readonly SourceSplit[]>;
}

/** A source vertex and every split its source listed at the start of the job. */
export interface EnumeratedSource {
  readonly vertex: number;
  readonly source: Pick<Source<unknown, SourceSplit>, 'subtaskOf' | 'name'>;
  readonly parallelism: number;
  readonly splits: readonly SourceSplit[];
}

/**
 * The static assignment of splitsOfSubtask: the source's own `subtaskOf`, else split i to subtask i % parallelism.
 * The same splits go to the same subtasks on every worker and in every run, so outputs and restores do not depend
 * on who asks. Every assignment is made (and checked) when the enumerator is built, so a source that assigns a
 * split outside its subtasks fails the deployment at once, as a configuration error.
 */
export class StaticSplitEnumerator implements SplitEnumerator {
  private readonly assignment = new Map<number, SourceSplit[][]>();

  constructor(sources: Iterable<EnumeratedSource>) {
    for (const { vertex, source, parallelism, splits } of sources) {
      this.assignment.set(
        vertex,
        Array.from({ length: parallelism }, (_, subtask) => splitsOfSubtask(source, splits, parallelism, subtask)),
      );
    }
  }

  assignedSplits(vertex: number, subtask: number): Promise<readonly SourceSplit[]> {
    return Promise.resolve(this.assignment.get(vertex)?.[subtask] ?? []);
  }
}
