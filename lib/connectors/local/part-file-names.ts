import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fencingTag, type FencingToken } from '../../core/index.ts';

/**
 * Names of part files. Final: `<prefix>-<subtask>-<n>.jsonl`, the only names readers look at. Hidden while being
 * written: `.<prefix>-<subtask>-<n>.jsonl.<attempt>.inprogress`; once pre-committed (closed, synced, waiting for
 * its commit): `.<prefix>-<subtask>-<n>.jsonl.<attempt>.pending`. The attempt tells the files of the current run
 * from leftovers of earlier ones; `n` is the final name the file will get.
 */

export interface PartFilePaths {
  readonly finalPath: string;
  readonly inProgressPath: string;
  readonly pendingPath: string;
}

/** A hidden part file as its name describes it. */
export interface HiddenPartFile {
  /** Undefined for names from before attempts were part of them (`.<prefix>-<subtask>-<n>.jsonl.inprogress`). */
  readonly attempt: string | undefined;
  readonly kind: 'inprogress' | 'pending';
}

/**
 * The attempt part of hidden file names: `fencingTag` of the attempt's token (`e<epoch>-a<attempt>`, unique per
 * attempt since epochs only grow). Names from before tokens carried a random id there; they still parse as another
 * attempt's, so their leftovers are cleaned up as before.
 */
export function attemptTag(fencing: FencingToken | undefined): string | undefined {
  return fencing === undefined ? undefined : fencingTag(fencing);
}

/** The attempt a writer names its files with: the run's, or a random one when the runtime gives none. */
export function writerAttempt(fencing: FencingToken | undefined): string {
  return attemptTag(fencing) ?? randomBytes(8).toString('hex');
}

export function partFilePaths(dir: string, prefix: string, subtask: number, n: number, attempt: string): PartFilePaths {
  const name = `${prefix}-${subtask}-${n}.jsonl`;
  return {
    finalPath: join(dir, name),
    inProgressPath: join(dir, `.${name}.${attempt}.inprogress`),
    pendingPath: join(dir, `.${name}.${attempt}.pending`),
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Reads hidden part file names of one prefix, any subtask; anything else gives undefined. */
export function hiddenPartFileParser(prefix: string): (name: string) => HiddenPartFile | undefined {
  const pattern = new RegExp(`^\\.${escapeRegExp(prefix)}-\\d+-\\d+\\.jsonl(?:\\.([A-Za-z0-9_-]+))?\\.(inprogress|pending)$`);
  return (name) => {
    const match = pattern.exec(name);
    if (match === null) return undefined;
    const kind = match[2] as HiddenPartFile['kind'];
    if (match[1] === undefined && kind === 'pending') return undefined;
    return { attempt: match[1], kind };
  };
}

/**
 * The first part number of a subtask past every part in `dir`, final or hidden, of any attempt, so a final name
 * is never reused: not that of a committed file, nor that of a pending file a checkpoint may still commit.
 */
export function nextPartNumber(dir: string, prefix: string, subtask: number): number {
  const pattern = new RegExp(`^\\.?${escapeRegExp(prefix)}-${subtask}-(\\d+)\\.jsonl(\\..*)?$`);
  let next = 0;
  for (const name of readdirSync(dir)) {
    const match = pattern.exec(name);
    if (match !== null) next = Math.max(next, Number(match[1]) + 1);
  }
  return next;
}
