import { randomBytes } from 'node:crypto';
import { readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobRecordStore } from '../checkpoint-storage.ts';
import { CheckpointIoError } from '../errors.ts';
import { fsyncDirectory, mkdirPrivate, writeFileDurably } from './durable-fs.ts';

const RECORD_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

function fileName(name: string): string {
  if (!RECORD_NAME.test(name)) throw new TypeError(`"${name}" is not a valid job record name`);
  return name;
}

/** Job records as files in the checkpoint folder, replaced atomically (temp file, fsync, rename, directory fsync). */
export class JobRecordDirectory implements JobRecordStore {
  constructor(private readonly dir: string) {}

  async read(name: string): Promise<string | undefined> {
    const file = join(this.dir, fileName(name));
    try {
      return await readFile(file, 'utf8');
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new CheckpointIoError('read', file, cause);
    }
  }

  async write(name: string, text: string): Promise<void> {
    const file = join(this.dir, fileName(name));
    const temp = `${file}.${randomBytes(4).toString('hex')}.inprogress`;
    try {
      await mkdirPrivate(this.dir);
      await writeFileDurably(temp, Buffer.from(text, 'utf8'));
      await rename(temp, file);
      await fsyncDirectory(this.dir);
    } catch (cause) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw new CheckpointIoError('write', file, cause);
    }
  }

  async remove(name: string): Promise<void> {
    const file = join(this.dir, fileName(name));
    try {
      await rm(file, { force: true });
    } catch (cause) {
      throw new CheckpointIoError('remove', file, cause);
    }
  }
}
