import { describe, expect, it } from 'vitest';
import { InternalError } from '../../../lib/core/index.ts';
import {
  MAX_CHECKPOINT_ID,
  checkpointDirName,
  directoryName,
  metadataPath,
  metadataTempPath,
  parseCheckpointDirName,
  parseDirectoryName,
  parseSavepointDirName,
  parseTaskStateFileName,
  parseTaskStatePath,
  savepointDirName,
  taskStateFileName,
  taskStatePath,
} from '../../../lib/checkpoint/naming.ts';

describe('checkpoint naming', () => {
  it('pads checkpoint ids to ten digits so listings sort by id', () => {
    expect(checkpointDirName(12)).toBe('chk-0000000012');
    expect(checkpointDirName(MAX_CHECKPOINT_ID)).toBe('chk-9999999999');
    const names = [9, 10, 100, 2].map(checkpointDirName).sort();
    expect(names.map(parseCheckpointDirName)).toEqual([2, 9, 10, 100]);
  });

  it('round-trips every kind of name', () => {
    expect(parseCheckpointDirName(checkpointDirName(7))).toBe(7);
    expect(savepointDirName(13, 1_700_000_000_000)).toBe('savepoint-0000000013-1700000000000');
    expect(parseSavepointDirName(savepointDirName(13, 1_700_000_000_000))).toEqual({ checkpointId: 13, timestamp: 1_700_000_000_000 });
    expect(parseSavepointDirName(savepointDirName(1, 0))).toEqual({ checkpointId: 1, timestamp: 0 });
    expect(taskStateFileName({ vertex: 3, subtask: 1 })).toBe('task-3-1.state');
    expect(parseTaskStateFileName('task-3-1.state')).toEqual({ vertex: 3, subtask: 1 });
    expect(parseTaskStateFileName('task-0-0.state')).toEqual({ vertex: 0, subtask: 0 });
    const sp = { kind: 'savepoint', checkpointId: 4, timestamp: 99 } as const;
    expect(parseDirectoryName(directoryName(sp))).toEqual(sp);
    expect(parseDirectoryName('chk-0000000004')).toEqual({ kind: 'checkpoint', checkpointId: 4 });
  });

  it('builds storage-relative paths with forward slashes', () => {
    const dir = { kind: 'checkpoint', checkpointId: 12 } as const;
    expect(metadataPath(dir)).toBe('chk-0000000012/_metadata');
    expect(metadataTempPath(dir)).toBe('chk-0000000012/_metadata.inprogress');
    expect(taskStatePath(dir, { vertex: 3, subtask: 1 })).toBe('chk-0000000012/task-3-1.state');
    expect(parseTaskStatePath('chk-0000000012/task-3-1.state')).toEqual({ dir, task: { vertex: 3, subtask: 1 } });
    expect(parseTaskStatePath('savepoint-0000000002-5/task-0-4.state')).toEqual({
      dir: { kind: 'savepoint', checkpointId: 2, timestamp: 5 },
      task: { vertex: 0, subtask: 4 },
    });
  });

  it('rejects anything that is not exactly one of its names', () => {
    for (const name of ['chk-12', 'chk-00000000012', 'chk-0000000000', 'chk-0000000012/', ' chk-0000000012', 'CHK-0000000012', 'chk-000000001a', 'chk-+000000012']) {
      expect(parseCheckpointDirName(name), name).toBeUndefined();
    }
    for (const name of ['savepoint-13-5', 'savepoint-0000000013', 'savepoint-0000000013-', 'savepoint-0000000013-05', 'savepoint-0000000000-5', 'savepoint-0000000013-5-x', 'savepoint-0000000013-99999999999999999']) {
      expect(parseSavepointDirName(name), name).toBeUndefined();
    }
    for (const name of ['task-01-2.state', 'task-1-02.state', 'task--1-2.state', 'task-1-2.state.tmp', 'task-1-2', 'task-1.state', '_metadata', 'task-1-2.STATE']) {
      expect(parseTaskStateFileName(name), name).toBeUndefined();
    }
    for (const path of ['task-3-1.state', '../chk-0000000012/task-3-1.state', 'chk-0000000012/x/task-3-1.state', '/chk-0000000012/task-3-1.state', 'chk-0000000012/_metadata', 'chk-0000000012\\task-3-1.state']) {
      expect(parseTaskStatePath(path), path).toBeUndefined();
    }
    expect(parseDirectoryName('checkpoints')).toBeUndefined();
  });

  it('refuses to build names from ids it could not parse back', () => {
    for (const id of [0, -1, 1.5, MAX_CHECKPOINT_ID + 1, Number.NaN]) {
      expect(() => checkpointDirName(id), String(id)).toThrow(InternalError);
    }
    expect(() => savepointDirName(1, -1)).toThrow(InternalError);
    expect(() => savepointDirName(1, 1.5)).toThrow(InternalError);
    expect(() => taskStateFileName({ vertex: -1, subtask: 0 })).toThrow(InternalError);
    expect(() => taskStateFileName({ vertex: 0, subtask: 1e9 })).toThrow(InternalError);
    expect(() => taskStateFileName({ vertex: 0, subtask: 0 }, -1)).toThrow(InternalError);
  });

  it('names a fenced attempt`s task file with its epoch and reads both forms back', () => {
    expect(taskStateFileName({ vertex: 3, subtask: 1 }, 1700000000000)).toBe('task-3-1-e1700000000000.state');
    expect(taskStatePath({ kind: 'checkpoint', checkpointId: 12 }, { vertex: 3, subtask: 1 }, 0)).toBe('chk-0000000012/task-3-1-e0.state');
    expect(parseTaskStateFileName('task-3-1-e42.state')).toEqual({ vertex: 3, subtask: 1 });
    expect(parseTaskStatePath('chk-0000000012/task-3-1-e42.state')).toEqual({ dir: { kind: 'checkpoint', checkpointId: 12 }, task: { vertex: 3, subtask: 1 } });
    for (const name of ['task-3-1-e.state', 'task-3-1-e01.state', 'task-3-1-e-1.state', 'task-3-1-42.state', 'task-3-1-e99999999999999999.state']) {
      expect(parseTaskStateFileName(name), name).toBeUndefined();
    }
  });
});
