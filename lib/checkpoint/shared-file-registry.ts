import type { CheckpointMetadata } from './types.ts';

/** Shared state files listed by each task of a checkpoint's metadata. */
export function sharedFilesOf(metadata: Pick<CheckpointMetadata, 'tasks'>): Set<string> {
  const paths = new Set<string>();
  for (const task of metadata.tasks) for (const file of task.sharedFiles ?? []) paths.add(file.path);
  return paths;
}

/**
 * Reference counts of shared state files over a set of checkpoints. Retention asks which files lose their last
 * reference when checkpoints go: only files some discarded checkpoint listed and no kept checkpoint lists. Files
 * no committed checkpoint lists at all are never returned here, because an in-flight checkpoint may be writing them
 * (start-up cleanup, when nothing is in flight, uses `unreferenced`).
 */
export class SharedFileRegistry {
  private readonly counts = new Map<string, number>();

  constructor(checkpoints: Iterable<Pick<CheckpointMetadata, 'tasks'>> = []) {
    for (const checkpoint of checkpoints) this.register(checkpoint);
  }

  register(checkpoint: Pick<CheckpointMetadata, 'tasks'>): void {
    for (const path of sharedFilesOf(checkpoint)) this.counts.set(path, (this.counts.get(path) ?? 0) + 1);
  }

  /** Drops a checkpoint's references; returns the files that no registered checkpoint refers to any more. */
  release(checkpoint: Pick<CheckpointMetadata, 'tasks'>): string[] {
    const freed: string[] = [];
    for (const path of sharedFilesOf(checkpoint)) {
      const count = (this.counts.get(path) ?? 0) - 1;
      if (count > 0) this.counts.set(path, count);
      else {
        this.counts.delete(path);
        freed.push(path);
      }
    }
    return freed;
  }

  referenceCount(path: string): number {
    return this.counts.get(path) ?? 0;
  }

  /** Of `paths` (everything found in the shared area), those no registered checkpoint refers to. */
  unreferenced(paths: Iterable<string>): string[] {
    return [...paths].filter((path) => !this.counts.has(path));
  }
}
