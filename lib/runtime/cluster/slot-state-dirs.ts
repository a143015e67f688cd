import { createHash } from 'node:crypto';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Where a slot keeps its RocksDB databases and temp files at one epoch:
 *
 *   <state-dir>/<job>-<hash>/slot-<s>/e<epoch>/<operator>-<subtask>/db-…   (EFS or the task's disk)
 *   <temp-dir>/<job>-<hash>/slot-<s>/e<epoch>/<operator>-<subtask>/tmp-…   (always the task's own disk)
 *
 * (`<job>-<hash>`: jobFolderName.)
 *
 * The epoch in the path is what makes clean-up safe on shared storage: a worker deletes only lower epochs of its
 * own slot, so it never deletes a directory of another slot, nor one of a newer owner of its slot (a zombie's
 * clean-up sees only lower epochs than its own, which nobody uses any more).
 */
export interface SlotDirs {
  /** The RocksDB state directory of the slot at this epoch (RocksDbServicesOptions.stateDir). */
  readonly stateDir: string;
  /** Local temp directory of the slot at this epoch (RocksDbServicesOptions.tempDir). */
  readonly tempDir: string;
  /** The previous epoch's databases were moved here: local recovery may find one at the restored checkpoint. */
  readonly carriedOver: boolean;
}

export interface SlotDirsRequest {
  /** `--state-dir`: shared (EFS) or local. */
  readonly stateRoot: string;
  /** Local disk. */
  readonly tempRoot: string;
  readonly jobId: string;
  readonly slot: number;
  readonly epoch: number;
}

/**
 * A job id as a directory name: its letters, digits, '.', '_' and '-' (at most 80, for people reading the folder),
 * then '-' and the first 16 hex digits of the id's SHA-256. The readable part alone is not injective (`orders/eu`
 * and `orders_eu` would share a folder, and one job's slot would rename or delete the other's live databases as
 * "lower epochs"); the hash suffix makes a collision as unlikely as a 64-bit hash collision.
 */
export function jobFolderName(jobId: string): string {
  const readable = jobId.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[._-]+/, '').slice(0, 80) || 'x';
  return `${readable}-${createHash('sha256').update(jobId, 'utf8').digest('hex').slice(0, 16)}`;
}

export function slotFolder(root: string, jobId: string, slot: number): string {
  return join(root, jobFolderName(jobId), `slot-${slot}`);
}

const EPOCH_DIR = /^e(0|[1-9]\d{0,15})$/;

/** Epoch folders of a slot folder, highest first. */
async function epochsIn(folder: string): Promise<{ epoch: number; path: string }[]> {
  let entries: string[];
  try {
    entries = await readdir(folder);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return entries
    .flatMap((e) => {
      const m = EPOCH_DIR.exec(e);
      return m === null ? [] : [{ epoch: Number(m[1]), path: join(folder, e) }];
    })
    .sort((a, b) => b.epoch - a.epoch);
}

/**
 * Makes the slot's directories for `epoch`. The newest lower epoch's state directory (the database a handed-over,
 * locally restarted or crashed slot left) is renamed to the new epoch, so the RocksDB backends find their old
 * databases as local-recovery candidates; they reuse one only if its marker says it holds exactly the restored
 * checkpoint, and a database still open elsewhere (a zombie) cannot be opened and is not used. Every other lower
 * epoch of this slot is deleted, in both roots; other slots and higher epochs are never touched.
 */
export async function prepareSlotDirs(request: SlotDirsRequest): Promise<SlotDirs> {
  const { epoch } = request;
  const stateFolder = slotFolder(request.stateRoot, request.jobId, request.slot);
  const tempFolder = slotFolder(request.tempRoot, request.jobId, request.slot);
  const stateDir = join(stateFolder, `e${epoch}`);
  const tempDir = join(tempFolder, `e${epoch}`);
  const lower = (await epochsIn(stateFolder)).filter((e) => e.epoch < epoch);
  const current = (await epochsIn(stateFolder)).some((e) => e.epoch === epoch);
  let carriedOver = false;
  const previous = lower[0];
  if (previous !== undefined && !current) {
    await rename(previous.path, stateDir);
    carriedOver = true;
  }
  await removeLowerEpochs(stateFolder, epoch);
  await removeLowerEpochs(tempFolder, epoch);
  await mkdir(stateDir, { recursive: true });
  await mkdir(tempDir, { recursive: true });
  return { stateDir, tempDir, carriedOver };
}

/** Deletes the epoch folders below `epoch` in one slot folder. */
export async function removeLowerEpochs(slotFolderPath: string, epoch: number): Promise<void> {
  const lower = (await epochsIn(slotFolderPath)).filter((e) => e.epoch < epoch);
  await Promise.all(lower.map((e) => rm(e.path, { recursive: true, force: true })));
}
