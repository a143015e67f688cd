import { basename } from 'node:path';
import type { Committer } from '../sink.ts';
import type { PartFileCommittable } from './part-file.ts';
import { sweepPendingLeftovers } from './part-file-cleanup.ts';
import { commitPartFiles } from './part-file-commit.ts';

/**
 * Commits part files (renames pending -> final, idempotently). Once a checkpoint of this attempt is complete (told
 * by `checkpointComplete`, or seen in the first commit of a file of its own attempt) it also deletes what earlier
 * attempts left pending (see `sweepPendingLeftovers`). Without an attempt it cannot tell its own files, and sweeps
 * nothing.
 */
export class JsonlFileCommitter implements Committer<PartFileCommittable> {
  private swept = false;
  private readonly ownSuffix: string | undefined;

  constructor(
    private readonly dir: string,
    private readonly prefix: string,
    private readonly attempt: string | undefined,
  ) {
    this.ownSuffix = attempt === undefined ? undefined : `.${attempt}.pending`;
  }

  async commit(committables: readonly PartFileCommittable[]): Promise<void> {
    commitPartFiles(committables);
    if (committables.some((c) => this.isOwn(c))) await this.sweepOnce();
  }

  async checkpointComplete(): Promise<void> {
    await this.sweepOnce();
  }

  private async sweepOnce(): Promise<void> {
    if (this.swept || this.attempt === undefined) return;
    this.swept = true;
    await sweepPendingLeftovers(this.dir, this.prefix, this.attempt);
  }

  private isOwn(c: PartFileCommittable): boolean {
    return basename(c.pendingPath).endsWith(this.ownSuffix as string);
  }
}
