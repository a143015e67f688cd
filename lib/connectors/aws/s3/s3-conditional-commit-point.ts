import { InternalError } from '../../../core/index.ts';
import { CheckpointIoError } from '../../../storage/errors.ts';
import type { CheckpointCommitPoint, CommitRecord } from './commit-point.ts';
import { isPreconditionFailed, type S3Objects } from './s3-objects.ts';

/**
 * Commits by writing the metadata object with `If-None-Match: *`: S3 stores it only if the key is free, so of two
 * writers exactly one succeeds (the other gets 412, or 409 while the first is in progress). The metadata's own
 * checksum trailer is then all a reader needs. Needs S3 (or a server) that honours conditional writes; s3rver does
 * not, so only the sequential check below protects there.
 */
export class S3ConditionalCommitPoint implements CheckpointCommitPoint {
  readonly mode = 's3-conditional' as const;

  constructor(private readonly objects: S3Objects) {}

  async commit(checkpointId: number, metadataPath: string, bytes: Uint8Array, sha256: string): Promise<void> {
    const url = this.objects.url(metadataPath);
    const refused = () =>
      new InternalError(`checkpoint ${checkpointId} in ${this.objects.url()} is already complete (${url} exists); checkpoint ids must be new`);
    // A retry of a commit whose response was lost finds its own bytes: that is success, not a conflict.
    const isOurs = async (): Promise<boolean | undefined> => {
      let existing: { bytes: number; sha256: string | undefined } | undefined;
      try {
        existing = await this.objects.head(metadataPath);
      } catch (cause) {
        throw new CheckpointIoError(`inspect`, url, cause);
      }
      return existing === undefined ? undefined : existing.sha256 === sha256 && existing.bytes === bytes.byteLength;
    };
    const before = await isOurs();
    if (before === true) return;
    if (before === false) throw refused();
    try {
      await this.objects.putIfAbsent(metadataPath, bytes, sha256);
    } catch (cause) {
      if (!isPreconditionFailed(cause)) throw new CheckpointIoError(`commit the metadata of checkpoint ${checkpointId} to`, url, cause);
      // The SDK re-sends a put whose response was lost, and the re-send loses to the first try: 412 on our own
      // bytes. A concurrent retry of the same commit ends here too.
      if ((await isOurs()) !== true) throw refused();
    }
  }

  records(): Promise<ReadonlyMap<number, CommitRecord> | undefined> {
    return Promise.resolve(undefined);
  }

  forget(): Promise<void> {
    return Promise.resolve();
  }
}
