import type { JobRecordStore } from '../../../storage/checkpoint-storage.ts';
import { CheckpointIoError } from '../../../storage/errors.ts';
import type { S3Objects } from './s3-objects.ts';

const RECORD_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

function checkedName(name: string): string {
  if (!RECORD_NAME.test(name)) throw new TypeError(`"${name}" is not a valid job record name`);
  return name;
}

/** Job records as objects beside the checkpoint folders; a PutObject replaces an object whole. */
export class S3JobRecordStore implements JobRecordStore {
  constructor(private readonly objects: S3Objects) {}

  async read(name: string): Promise<string | undefined> {
    const path = checkedName(name);
    try {
      const bytes = await this.objects.getBytes(path);
      return bytes === undefined ? undefined : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    } catch (cause) {
      throw new CheckpointIoError('read', this.objects.url(path), cause);
    }
  }

  async write(name: string, text: string): Promise<void> {
    const path = checkedName(name);
    const bytes = Buffer.from(text, 'utf8');
    try {
      await this.objects.putBytes(path, bytes);
    } catch (cause) {
      throw new CheckpointIoError('write', this.objects.url(path), cause);
    }
  }

  async remove(name: string): Promise<void> {
    const path = checkedName(name);
    try {
      await this.objects.deleteOne(path);
    } catch (cause) {
      throw new CheckpointIoError('remove', this.objects.url(path), cause);
    }
  }
}
