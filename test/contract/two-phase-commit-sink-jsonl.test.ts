import type * as NodeFs from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { vi } from 'vitest';
import { jsonlFileSink, type JsonlFileSink } from '../../lib/connectors/local/jsonl-file-sink.ts';
import { runTwoPhaseCommitSinkContract } from './two-phase-commit-sink.contract.ts';

/**
 * A crash between the renames of a multi-file commit: once armed, `renameSync` of a pending part file to its final
 * name fails after `allowed` of them (the other renames, in-progress to pending, stay as they are).
 */
const crash = vi.hoisted(() => ({ allowed: Number.POSITIVE_INFINITY }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof NodeFs>();
  const renameSync: typeof fs.renameSync = (from, to) => {
    if (String(from).endsWith('.pending')) {
      if (crash.allowed <= 0) throw Object.assign(new Error(`injected crash before renaming ${String(from)}`), { code: 'EIO' });
      crash.allowed--;
    }
    fs.renameSync(from, to);
  };
  return { ...fs, renameSync, default: { ...fs, renameSync } };
});

/** The one place this runner builds the implementation: small part files, so a checkpoint's transaction is several. */
function createSink(dir: string): JsonlFileSink<string> {
  return jsonlFileSink<string>({ dir, rollSizeBytes: 256, bufferSizeBytes: 64 });
}

runTwoPhaseCommitSinkContract('jsonlFileSink', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-2pc-contract-'));
  crash.allowed = Number.POSITIVE_INFINITY;
  return {
    sink: () => createSink(dir),
    record: (id) => id,
    async visible() {
      const lines: string[] = [];
      for (const name of await readdir(dir)) {
        if (name.startsWith('.')) continue;
        const text = await readFile(join(dir, name), 'utf8');
        for (const line of text.split('\n')) if (line !== '') lines.push(JSON.parse(line) as string);
      }
      return lines.sort();
    },
    leftovers: async () => (await readdir(dir)).filter((name) => basename(name).startsWith('.')).sort(),
    recordsForSeveralChunks: 120,
    crashAfterChunks: (chunks) => (crash.allowed = chunks),
    recover: () => (crash.allowed = Number.POSITIVE_INFINITY),
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
});
