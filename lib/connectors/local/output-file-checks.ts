import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ConfigError } from '../../core/index.ts';

export interface OutputFileCheck {
  /** The file a job will write. */
  readonly path: string;
  /** How the user named it, for messages: a flag (`--late-output`) or an option name. */
  readonly label: string;
  /** Files or directories the job reads: the output may be none of them, nor lie inside one. @default [] */
  readonly inputs?: readonly string[];
}

function osReason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The real path of `path`, or of its nearest existing ancestor joined with the rest (the file may not exist yet). */
export function realPathOf(path: string): string {
  const absolute = resolve(path);
  try {
    return realpathSync(absolute);
  } catch {
    const parent = dirname(absolute);
    return parent === absolute ? absolute : join(realPathOf(parent), basename(absolute));
  }
}

function isSameOrInside(path: string, container: string): boolean {
  const rel = relative(container, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** Whether two paths are the same existing file under different names (hard links). */
function isSameFile(a: string, b: string): boolean {
  try {
    const x = statSync(a);
    const y = statSync(b);
    return x.isFile() && x.ino === y.ino && x.dev === y.dev;
  } catch {
    return false;
  }
}

/**
 * Checks, before a job writes anything, that `path` can be an output file: not a directory, not one of the job's
 * inputs (after resolving symlinks and hard links) nor inside an input directory, and its directory exists or can
 * be created and is writable. Creates nothing. Throws a ConfigError naming the flag, the path and the OS cause, so
 * the command exits 2 instead of destroying a file or failing half-way. Whether an existing file may be appended
 * to is the writer's decision.
 */
export function checkOutputFile(check: OutputFileCheck): void {
  const { path, label } = check;
  const target = realPathOf(path);
  for (const input of check.inputs ?? []) {
    const source = realPathOf(input);
    if (isSameOrInside(target, source) || isSameFile(target, source)) {
      const what = target === source || isSameFile(target, source) ? 'is the job\'s input' : `is inside the job's input directory ${input}`;
      throw new ConfigError(`${label} ${path} ${what}; writing it would destroy or feed back into the input. Give a path outside the input.`);
    }
  }
  let info;
  try {
    info = statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ConfigError(`${label} ${path} cannot be used: ${osReason(err)}`, { cause: err });
    }
  }
  if (info?.isDirectory() === true) throw new ConfigError(`${label} ${path} is a directory; give the path of a file (it need not exist)`);
  if (info !== undefined && !info.isFile()) throw new ConfigError(`${label} ${path} is not a regular file; give the path of a file`);
  const problem = writableDirectoryProblem(dirname(resolve(path)));
  if (problem !== undefined) throw new ConfigError(`${label} ${path} cannot be written: ${problem.reason}`, { cause: problem.cause });
}

/**
 * Why files cannot be created in `dir` (undefined when they can): it, or the nearest ancestor that exists (the
 * folders in between would be created), is not a directory or not writable. Creates nothing.
 */
function writableDirectoryProblem(dir: string): { reason: string; cause: unknown } | undefined {
  let current = resolve(dir);
  for (;;) {
    let info;
    try {
      info = statSync(current);
    } catch (err) {
      const parent = dirname(current);
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && parent !== current) {
        current = parent;
        continue;
      }
      return { reason: osReason(err), cause: err };
    }
    if (!info.isDirectory()) return { reason: `${current} is not a directory (ENOTDIR)`, cause: undefined };
    try {
      accessSync(current, constants.W_OK);
      return undefined;
    } catch (err) {
      return { reason: osReason(err), cause: err };
    }
  }
}

/** Like `checkOutputFile` for an output directory: it exists as a writable directory or can be created. Creates nothing. */
export function checkOutputDirectory(path: string, label: string): void {
  let info;
  try {
    info = statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new ConfigError(`${label} ${path} cannot be used: ${osReason(err)}`, { cause: err });
  }
  if (info !== undefined && !info.isDirectory()) throw new ConfigError(`${label} ${path} is a file, not a directory; give a directory path (it need not exist)`);
  const problem = writableDirectoryProblem(path);
  if (problem !== undefined) throw new ConfigError(`${label} ${path} cannot be written: ${problem.reason}`, { cause: problem.cause });
}
