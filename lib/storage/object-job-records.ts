import type { JobRecordStore } from './checkpoint-storage.ts';
import { CheckpointIoError } from './errors.ts';
import type { ObjectStore } from './object-store.ts';

const RECORD_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

function checkedName(name: string): string {
  if (!RECORD_NAME.test(name)) throw new TypeError(`"${name}" is not a valid job record name`);
  return name;
}

/** Job records as objects at the storage's root, replaced whole by a put (readers see the old or the new text). */
export class ObjectJobRecords implements JobRecordStore {
  constructor(private readonly store: ObjectStore) {}

  async read(name: string): Promise<string | undefined> {
    const path = checkedName(name);
    try {
      const bytes = await this.store.get(path);
      return bytes === undefined ? undefined : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    } catch (cause) {
      throw new CheckpointIoError('read', this.store.describe(path), cause);
    }
  }

  async write(name: string, text: string): Promise<void> {
    const path = checkedName(name);
    try {
      await this.store.put(path, Buffer.from(text, 'utf8'));
    } catch (cause) {
      throw new CheckpointIoError('write', this.store.describe(path), cause);
    }
  }

  async remove(name: string): Promise<void> {
    const path = checkedName(name);
    try {
      await this.store.delete([path]);
    } catch (cause) {
      throw new CheckpointIoError('remove', this.store.describe(path), cause);
    }
  }
}
