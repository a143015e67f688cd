import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ConfigError } from '../../core/index.ts';

/**
 * The owner record of an output file a job appends to: a hidden JSON file beside it, `.<name>.sluice.json`. It
 * says which job's output the file is, so a restart of that job may append to it and anything else is refused
 * (an existing file without a record is the user's, never ours to change).
 */
export function ownerRecordPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.sluice.json`);
}

/** The owner record's content, or undefined when there is none (or it cannot be read as one). */
export function readOwnerRecord<R extends object>(path: string): R | undefined {
  let text: string;
  try {
    text = readFileSync(ownerRecordPath(path), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`cannot read the owner record of ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null ? (value as R) : undefined;
  } catch {
    return undefined;
  }
}

/** Writes the owner record atomically (temp file + rename): a crash leaves the old record or the new one. */
export function writeOwnerRecord(path: string, record: object): void {
  const target = ownerRecordPath(path);
  const temp = `${target}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temp, JSON.stringify(record) + '\n', { mode: 0o600 });
  renameSync(temp, target);
}
