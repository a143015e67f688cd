import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../core/index.ts';
import type { JobRecordStore } from '../storage/checkpoint-storage.ts';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../storage/fs/durable-fs.ts';
import { RestRequestError } from './rest-client.ts';

/**
 * `<checkpoint-dir>/rest.json`: where the REST API of the job checkpointing into that folder listens, so that
 * `sluice savepoint --checkpoint-dir DIR` (and `stop`, `checkpoints`) find it without being told the port.
 */
export const REST_ENDPOINT_FILE = 'rest.json';

export interface RestEndpoint {
  readonly url: string;
  /** Process id of `sluice run`. */
  readonly pid: number;
  readonly jobId: string;
  readonly jobName: string;
  /** Epoch ms. */
  readonly startTime: number;
  /** Host name of `sluice run`: the process id means something only there. Absent in files of older versions. */
  readonly host?: string;
}

export function restEndpointPath(checkpointDir: string): string {
  return join(checkpointDir, REST_ENDPOINT_FILE);
}

/**
 * Written by rename, so a reader never sees half a file; readable by its owner only (0600, in a folder created 0700),
 * as the checkpoint files beside it: other users of the machine have no business with the job's endpoint.
 */
export async function writeRestEndpoint(checkpointDir: string, endpoint: RestEndpoint): Promise<void> {
  const file = restEndpointPath(checkpointDir);
  const temp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  await mkdir(checkpointDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  await writeFile(temp, `${JSON.stringify(endpoint, null, 2)}\n`, { encoding: 'utf8', mode: PRIVATE_FILE_MODE, flag: 'wx' });
  await rename(temp, file);
}

/** The endpoint in the folder, or undefined when there is none. A malformed file is reported as such. */
export async function readRestEndpoint(checkpointDir: string): Promise<RestEndpoint | undefined> {
  const file = restEndpointPath(checkpointDir);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const value = JSON.parse(text) as Partial<RestEndpoint>;
  if (typeof value.url !== 'string' || typeof value.pid !== 'number') throw new RestRequestError(`${file} does not name a REST endpoint`, undefined);
  return value as RestEndpoint;
}

/** Removes the file if it still describes `endpoint` (a later run into the same folder may have replaced it). */
export async function removeRestEndpoint(checkpointDir: string, endpoint: RestEndpoint): Promise<void> {
  try {
    const current = await readRestEndpoint(checkpointDir);
    if (current?.url === endpoint.url && current.pid === endpoint.pid) await rm(restEndpointPath(checkpointDir), { force: true });
  } catch {
    // Best effort: a stale file is detected by the commands (nothing listens there any more).
  }
}

/**
 * Where the endpoint record of a job checkpointing to an object store (`s3://…`) is: the job record `rest.json`
 * beside its checkpoints, read and written through the catalog's job records.
 */
export function remoteRestEndpointPath(location: string): string {
  return `${location.replace(/[?#].*$/, '').replace(/\/+$/, '')}/${REST_ENDPOINT_FILE}`;
}

export async function writeRestEndpointRecord(records: JobRecordStore, endpoint: RestEndpoint): Promise<void> {
  await records.write(REST_ENDPOINT_FILE, `${JSON.stringify(endpoint, null, 2)}\n`);
}

export async function readRestEndpointRecord(records: JobRecordStore, where: string): Promise<RestEndpoint | undefined> {
  const text = await records.read(REST_ENDPOINT_FILE);
  if (text === undefined) return undefined;
  const value = JSON.parse(text) as Partial<RestEndpoint>;
  if (typeof value.url !== 'string' || typeof value.pid !== 'number') throw new ConfigError(`${where} does not name a REST endpoint`);
  return value as RestEndpoint;
}

/** Removes the record if it still describes `endpoint`; best effort, as `removeRestEndpoint`. */
export async function removeRestEndpointRecord(records: JobRecordStore, endpoint: RestEndpoint): Promise<void> {
  try {
    const current = await readRestEndpointRecord(records, REST_ENDPOINT_FILE);
    if (current?.url === endpoint.url && current.pid === endpoint.pid) await records.remove(REST_ENDPOINT_FILE);
  } catch {
    // A stale record is detected by the commands (nothing listens there any more).
  }
}
