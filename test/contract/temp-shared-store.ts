import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { SharedStateFileRef, SharedStateStore } from '../../lib/state/index.ts';

/** A SharedStateStore on a temp directory, for tests: puts copy files in, gets copy them out and verify them. */
export class TempSharedStore implements SharedStateStore {
  readonly puts: string[] = [];

  private constructor(readonly root: string) {}

  get location(): string {
    return this.root;
  }

  /** A store on an existing directory (another process's). */
  static at(root: string): TempSharedStore {
    return new TempSharedStore(root);
  }

  static async create(prefix = 'sluice-shared-'): Promise<TempSharedStore> {
    return new TempSharedStore(await mkdtemp(join(tmpdir(), prefix)));
  }

  async put(name: string, localPath: string): Promise<SharedStateFileRef> {
    const path = `shared/${name}`;
    const target = join(this.root, path);
    await mkdir(dirname(target), { recursive: true });
    await copyFile(localPath, target);
    this.puts.push(path);
    const bytes = await readFile(target);
    return { path, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
  }

  async get(ref: SharedStateFileRef, localPath: string): Promise<void> {
    const source = join(this.root, ref.path);
    await mkdir(dirname(localPath), { recursive: true });
    await copyFile(source, localPath);
    const bytes = await readFile(localPath);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    if (bytes.length !== ref.bytes || sha256 !== ref.sha256) throw new Error(`shared file ${ref.path} does not match its reference`);
  }

  async size(ref: SharedStateFileRef): Promise<number> {
    return (await stat(join(this.root, ref.path))).size;
  }

  async dispose(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }
}
