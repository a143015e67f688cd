// Bytes written under a directory tree (the workers' state dir), measured from outside the writing processes: every
// `pollMs` it walks the tree and keeps, per file (by inode, so an epoch folder's rename is not a new file), the
// largest size seen. RocksDB writes its files once or appends to them (SSTs, WAL, MANIFEST), so the sum of the largest
// sizes is the bytes written, short of files created and deleted between two walks and of rewrites in place.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

export class DirWriteMeter {
  /** Largest size seen per live inode. */
  private readonly sizes = new Map<string, number>();
  /** Bytes of inodes that shrank (deleted, the number reused by a new file): counted once, then restarted. */
  private retired = 0;
  private timer: NodeJS.Timeout | undefined;
  private walking: Promise<void> | undefined;

  constructor(
    private readonly roots: () => readonly string[],
    private readonly pollMs = 250,
  ) {}

  start(): void {
    const tick = (): void => {
      this.walking = this.walk().finally(() => {
        if (this.timer !== undefined) this.timer = setTimeout(tick, this.pollMs);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  /** A walk now, then the total so far. */
  async bytesWritten(): Promise<number> {
    await this.walking;
    await this.walk();
    let total = this.retired;
    for (const size of this.sizes.values()) total += size;
    return total;
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.walking;
  }

  private async walk(): Promise<void> {
    for (const root of this.roots()) await this.walkDir(root);
  }

  private async walkDir(dir: string): Promise<void> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return; // not there yet, or removed while walking
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        await this.walkDir(path);
        continue;
      }
      if (!entry.isFile()) continue;
      try {
        const s = await stat(path, { bigint: true });
        const key = `${s.dev}:${s.ino}`;
        const size = Number(s.size);
        const before = this.sizes.get(key);
        if (before !== undefined && size < before) {
          this.retired += before;
          this.sizes.set(key, size);
        } else if (before === undefined || size > before) {
          this.sizes.set(key, size);
        }
      } catch {
        // deleted between readdir and stat
      }
    }
  }
}
