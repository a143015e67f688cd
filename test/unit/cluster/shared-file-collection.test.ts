import { describe, expect, it } from 'vitest';
import { collectableSharedFiles } from '../../../lib/cluster/shared-file-collection.ts';

const metadata = (...paths: string[]) => ({
  tasks: [{ task: { vertex: 0, subtask: 0 }, vertexName: 'v', path: 'chk-1/t', bytes: 1, sha256: 'x', sharedFiles: paths.map((path) => ({ path, bytes: 1, sha256: 'x' })) }],
});

describe('collectableSharedFiles', () => {
  const found = [
    { path: 'shared/a', modifiedAt: 0 },
    { path: 'shared/b', modifiedAt: 0 },
    { path: 'shared/c', modifiedAt: 9_000 },
  ];

  it('keeps what a complete checkpoint lists and what is younger than the minimum age', () => {
    expect(collectableSharedFiles(found, [metadata('shared/a')], 10_000, 5_000)).toEqual(['shared/b']);
  });

  it('takes every unlisted file once old enough', () => {
    expect(collectableSharedFiles(found, [], 20_000, 5_000)).toEqual(['shared/a', 'shared/b', 'shared/c']);
    expect(collectableSharedFiles(found, [metadata('shared/a', 'shared/b', 'shared/c')], 20_000, 5_000)).toEqual([]);
  });
});
