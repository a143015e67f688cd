import { closeSync, existsSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ConfigError, InternalError, SluiceError } from '../../core/index.ts';
import { fsyncDirectory } from './part-file-commit.ts';
import { readOwnerRecord, writeOwnerRecord } from './output-owner.ts';

/**
 * One checkpoint's share of an appended file: a pending segment to add at the end of `target`, or none (`segment`
 * null) when nothing was written since the last checkpoint. Every checkpoint holds one, so a restored job knows
 * it owns `target` through `owner`. Plain data, kept in checkpointed state.
 */
export interface AppendCommittable {
  /** The file that grows. */
  readonly target: string;
  /** Which job's output `target` is: the id of the run that started the job, kept across restores. */
  readonly owner: string;
  /** Hidden file holding the segment's lines, or null for an empty segment. */
  readonly segment: string | null;
  /** Exact size of the segment in bytes. */
  readonly size: number;
}

/** The owner record of an appended file, also the journal of the append in progress. */
export interface AppendOwnerRecord {
  readonly kind: 'appended';
  readonly owner: string;
  /** The segment being appended and the target's size before it: a replayed commit truncates back to `offset`. */
  readonly appending?: { readonly segment: string; readonly offset: number };
}

/** Why a segment cannot be appended: its pending file no longer has its pre-committed size. Retrying cannot help. */
export class AppendCommitError extends SluiceError {
  constructor(message: string) {
    super('APPEND_COMMIT', message, { retriable: false });
  }
}

const COPY_CHUNK = 1024 * 1024;

/** Committables come back from checkpoint files: refuse anything that is not one rather than append at random. */
export function assertAppendCommittable(value: unknown, target: string): asserts value is AppendCommittable {
  const c = value as Partial<AppendCommittable> | null;
  const ok =
    typeof c === 'object' &&
    c !== null &&
    c.target === target &&
    typeof c.owner === 'string' &&
    (c.segment === null || (typeof c.segment === 'string' && dirname(c.segment) === dirname(target) && basename(c.segment).startsWith('.'))) &&
    Number.isSafeInteger(c.size) &&
    (c.size as number) >= 0;
  if (!ok) throw new InternalError(`appended file ${target}: not one of its committables: ${JSON.stringify(value)}`);
}

/**
 * Refuses to write `target` unless it does not exist or is the output of `owner` (the owner of the restored
 * checkpoint's committables; undefined for a job that starts without one). A user's file, another job's, or the
 * output of an earlier run that this one does not continue is never appended to.
 */
export function checkAppendTarget(target: string, label: string, owner: string | undefined): void {
  if (!existsSync(target)) return;
  const record = readOwnerRecord<Partial<AppendOwnerRecord>>(target);
  if (owner !== undefined && record?.kind === 'appended' && record.owner === owner) return;
  const why =
    record?.kind !== 'appended'
      ? 'it was not written by this job'
      : owner === undefined
        ? 'it is the output of an earlier run and this run starts from the beginning (no checkpoint to continue)'
        : 'it is the output of another job';
  throw new ConfigError(
    `${label} ${target} already exists and ${why}; refusing to overwrite or append to it. Remove or move it, or give ` +
      'another path (only a restart of the same job from its checkpoints, with the same --checkpoint-dir, continues its own file).',
  );
}

/** Creates `target` empty (owner record first) if it does not exist yet, so a committed job always leaves its file. */
function ensureTarget(c: AppendCommittable): void {
  if (existsSync(c.target)) return;
  mkdirSync(dirname(c.target), { recursive: true });
  writeOwnerRecord(c.target, { kind: 'appended', owner: c.owner } satisfies AppendOwnerRecord);
  closeSync(openSync(c.target, 'a', 0o600));
}

/**
 * Appends a committable's segment to its target, idempotently: a segment whose pending file is gone was appended
 * already. Before appending, the owner record journals the segment and the target's size; a commit replayed after
 * a crash in the middle of an append truncates the target back to that size and appends again, so the segment's
 * lines are in the file exactly once. The pending file is deleted only after the target is synced.
 */
export function commitAppend(c: AppendCommittable): void {
  ensureTarget(c);
  if (c.segment === null || !existsSync(c.segment)) return;
  const name = basename(c.segment);
  const size = statSync(c.segment).size;
  if (size !== c.size) {
    throw new AppendCommitError(
      `cannot append ${c.segment} to ${c.target}: it holds ${size} bytes but ${c.size} were pre-committed; it was changed after its checkpoint, so its data is lost.`,
    );
  }
  const record = readOwnerRecord<AppendOwnerRecord>(c.target);
  let offset: number;
  if (record?.appending?.segment === name) {
    offset = record.appending.offset;
  } else {
    offset = statSync(c.target).size;
    writeOwnerRecord(c.target, { kind: 'appended', owner: c.owner, appending: { segment: name, offset } } satisfies AppendOwnerRecord);
  }
  const out = openSync(c.target, 'r+');
  const input = openSync(c.segment, 'r');
  try {
    ftruncateSync(out, offset);
    const chunk = Buffer.allocUnsafe(Math.min(COPY_CHUNK, Math.max(size, 1)));
    let copied = 0;
    while (copied < size) {
      const n = readSync(input, chunk, 0, Math.min(chunk.length, size - copied), copied);
      if (n === 0) break;
      let written = 0;
      while (written < n) written += writeSync(out, chunk, written, n - written, offset + copied + written);
      copied += n;
    }
    fsyncSync(out);
  } finally {
    closeSync(input);
    closeSync(out);
  }
  unlinkSync(c.segment);
  fsyncDirectory(dirname(c.target));
}

/** Hidden segment files of `target`: `.<name>.<attempt>-<n>.inprogress` while written, `.pending` once pre-committed. */
export function segmentPath(target: string, attempt: string, n: number, kind: 'inprogress' | 'pending'): string {
  return join(dirname(target), `.${basename(target)}.${attempt}-${n}.${kind}`);
}
