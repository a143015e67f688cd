import { createHash } from 'node:crypto';
import { CHECKPOINT_FORMAT_VERSION } from '../checkpoint/types.ts';
import type { CheckpointMetadata, OperatorStateRecord, TaskStateHandle } from '../checkpoint/types.ts';
import { parseSharedFilePath, parseTaskStatePath } from '../checkpoint/naming.ts';
import { CheckpointCorruptError } from './errors.ts';
import { isFencingToken } from '../core/fencing.ts';

/*
 * Metadata file layout, readable with `cat`:
 *   SLUICE CHECKPOINT METADATA v1\n
 *   { ...pretty JSON of CheckpointMetadata... }\n
 *   sha256:<64 lowercase hex of every byte before this line>\n
 * The fixed-length trailer is the commit mark: a file cut anywhere lacks it or fails its hash.
 */
const HEADER_PREFIX = 'SLUICE CHECKPOINT METADATA v';
const TRAILER_PREFIX = 'sha256:';
const TRAILER_BYTES = TRAILER_PREFIX.length + 64 + 1;
const HEX64 = /^[0-9a-f]{64}$/;

export function encodeMetadata(metadata: CheckpointMetadata): Uint8Array {
  const head = Buffer.from(`${HEADER_PREFIX}${metadata.version}\n${JSON.stringify(metadata, null, 2)}\n`, 'utf8');
  const sha = createHash('sha256').update(head).digest('hex');
  return Buffer.concat([head, Buffer.from(`${TRAILER_PREFIX}${sha}\n`, 'latin1')]);
}

/**
 * Decodes and verifies a metadata file. `source` names the file in errors; `expectedId`, when given, must match the
 * checkpoint id inside (a metadata file copied into the wrong directory is corrupt).
 */
export function decodeMetadata(bytes: Uint8Array, source: string, expectedId?: number): CheckpointMetadata {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerEnd = buf.indexOf(0x0a);
  const header = headerEnd < 0 ? '' : buf.toString('latin1', 0, headerEnd);
  if (!header.startsWith(HEADER_PREFIX)) {
    throw new CheckpointCorruptError(source, `it does not start with "${HEADER_PREFIX}<version>"`);
  }
  const versionText = header.slice(HEADER_PREFIX.length);
  if (!/^[1-9][0-9]{0,8}$/.test(versionText)) {
    throw new CheckpointCorruptError(source, `its header "${header}" has no valid version`);
  }
  const version = Number(versionText);
  if (version !== CHECKPOINT_FORMAT_VERSION) {
    throw new CheckpointCorruptError(
      source,
      `format version ${version} is not supported (this Sluice reads version ${CHECKPOINT_FORMAT_VERSION})`,
    );
  }
  const bodyEnd = buf.length - TRAILER_BYTES;
  if (bodyEnd <= headerEnd) {
    throw new CheckpointCorruptError(source, 'it is truncated (no checksum line)');
  }
  const trailer = buf.toString('latin1', bodyEnd);
  const sha = trailer.slice(TRAILER_PREFIX.length, -1);
  if (!trailer.startsWith(TRAILER_PREFIX) || !trailer.endsWith('\n') || !HEX64.test(sha)) {
    throw new CheckpointCorruptError(source, 'it is truncated or its last line is not "sha256:<hex>"');
  }
  const actual = createHash('sha256').update(buf.subarray(0, bodyEnd)).digest('hex');
  if (actual !== sha) {
    throw new CheckpointCorruptError(source, 'its sha256 does not match its contents');
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(buf.subarray(headerEnd + 1, bodyEnd)));
  } catch (cause) {
    throw new CheckpointCorruptError(source, 'its body is not valid JSON', { cause });
  }
  const metadata = checkMetadata(value, source);
  if (metadata.version !== version) {
    throw new CheckpointCorruptError(source, `its header says version ${version} but its body ${metadata.version}`);
  }
  if (expectedId !== undefined && metadata.checkpointId !== expectedId) {
    throw new CheckpointCorruptError(
      source,
      `it describes checkpoint ${metadata.checkpointId}, not ${expectedId} as its location says`,
    );
  }
  return metadata;
}

function isCount(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

function checkMetadata(value: unknown, source: string): CheckpointMetadata {
  const fail = (what: string): never => {
    throw new CheckpointCorruptError(source, `its body has ${what}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('no metadata object');
  const m = value as Record<string, unknown>;
  if (!isCount(m.version)) fail('no valid "version"');
  if (!isCount(m.checkpointId)) fail('no valid "checkpointId"');
  if (typeof m.savepoint !== 'boolean') fail('no valid "savepoint"');
  if (typeof m.triggeredAt !== 'number' || typeof m.completedAt !== 'number') fail('no valid trigger/completion time');
  if (!isCount(m.maxParallelism) || m.maxParallelism === 0) fail('no valid "maxParallelism"');
  const parallelism = m.parallelism;
  if (typeof parallelism !== 'object' || parallelism === null || Array.isArray(parallelism)) {
    fail('no valid "parallelism"');
  }
  for (const [vertex, p] of Object.entries(parallelism as object)) {
    if (!/^(0|[1-9][0-9]*)$/.test(vertex) || !isCount(p) || p === 0) fail(`an invalid parallelism for "${vertex}"`);
  }
  if (!Array.isArray(m.tasks)) return fail('no "tasks" list');
  m.tasks.forEach((t: unknown, i) => checkTask(t, i, fail));
  if (m.finishedTasks !== undefined) {
    if (!Array.isArray(m.finishedTasks)) fail('an invalid "finishedTasks"');
    for (const t of m.finishedTasks as unknown[]) {
      const task = t as Record<string, unknown> | null;
      if (typeof task !== 'object' || task === null || !isCount(task.vertex) || !isCount(task.subtask)) {
        fail('an invalid "finishedTasks" entry');
      }
    }
  }
  if (m.operators !== undefined) {
    if (!Array.isArray(m.operators)) fail('an "operators" that is not a list');
    (m.operators as unknown[]).forEach((o, i) => checkOperator(o, i, fail));
  }
  if (m.fencing !== undefined && !isFencingToken(m.fencing)) fail('an invalid "fencing" token');
  return value as CheckpointMetadata;
}

function checkOperator(value: unknown, index: number, fail: (what: string) => never): void {
  const o = value as Partial<Record<keyof OperatorStateRecord, unknown>> | null;
  const ok =
    typeof o === 'object' && o !== null && isCount(o.nodeId) && isCount(o.vertex) && typeof o.name === 'string' &&
    typeof o.stateful === 'boolean' && typeof o.meaning === 'object' && o.meaning !== null && !Array.isArray(o.meaning) &&
    Object.values(o.meaning).every((v) => typeof v === 'string' || typeof v === 'number');
  if (!ok) fail(`an invalid operator entry #${index}`);
}

function checkTask(value: unknown, index: number, fail: (what: string) => never): void {
  const what = `an invalid task entry #${index}`;
  if (typeof value !== 'object' || value === null) fail(what);
  const t = value as Partial<Record<keyof TaskStateHandle, unknown>>;
  const task = t.task as Record<string, unknown> | null | undefined;
  if (typeof task !== 'object' || task === null || !isCount(task.vertex) || !isCount(task.subtask)) fail(what);
  if (typeof t.vertexName !== 'string' || typeof t.path !== 'string' || t.path === '') fail(what);
  if (!isCount(t.bytes) || typeof t.sha256 !== 'string' || !HEX64.test(t.sha256)) fail(what);
  // The path must name this very task's file: a stray path could read another task's state or leave the storage.
  const parsed = parseTaskStatePath(t.path as string);
  if (parsed === undefined || parsed.task.vertex !== task.vertex || parsed.task.subtask !== task.subtask) {
    fail(`task entry #${index} with path "${String(t.path)}", which is not its task's state file`);
  }
  if (t.sharedFiles !== undefined) {
    if (!Array.isArray(t.sharedFiles)) fail(`task entry #${index} with a "sharedFiles" that is not a list`);
    for (const f of t.sharedFiles as unknown[]) {
      const file = f as Record<string, unknown> | null;
      const ok =
        typeof file === 'object' && file !== null && typeof file.path === 'string' && parseSharedFilePath(file.path) !== undefined &&
        isCount(file.bytes) && typeof file.sha256 === 'string' && HEX64.test(file.sha256);
      if (!ok) fail(`task entry #${index} with an invalid shared file entry ${JSON.stringify(f)}`);
    }
  }
}
