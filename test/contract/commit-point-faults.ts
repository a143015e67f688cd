import type { CommitPointFaults } from './commit-point.contract.ts';
import type { InMemoryS3 } from '../harness/in-memory-s3.ts';

/** A network error as the SDK reports a request whose response never came. */
export function lostResponse(): Error {
  return Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET', $metadata: {} });
}

/**
 * Faults of the commit-point contract on the in-memory S3: `isDeciding` tells the S3 write that decides a commit
 * (S3 conditional: the conditional put of the metadata) from the others; every PutObject is a metadata write here.
 * Each fault hits the next matching call once.
 */
export function s3CommitFaults(s3: InMemoryS3, isDeciding: (input: Record<string, unknown>) => boolean): CommitPointFaults {
  const once = (matches: (command: string, input: Record<string, unknown>) => boolean, act: (apply: () => Promise<Record<string, unknown>>) => Promise<Record<string, unknown>>) => {
    let armed = true;
    s3.intercept(async (command, input, apply) => {
      if (!armed || !matches(command, input)) return apply();
      armed = false;
      return act(apply);
    });
  };
  const deciding = (command: string, input: Record<string, unknown>) => command === 'PutObjectCommand' && isDeciding(input);
  return {
    loseDecidingResponseAndResend: () =>
      once(deciding, async (apply) => {
        await apply();
        return apply();
      }),
    loseDecidingResponse: () =>
      once(deciding, async (apply) => {
        await apply();
        throw lostResponse();
      }),
    failMetadataWrite: () =>
      once(
        (command) => command === 'PutObjectCommand',
        () => Promise.reject(lostResponse()),
      ),
  };
}
