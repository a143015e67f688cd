import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BarrierElement } from '../../../lib/core/index.ts';
import { taskStateFileName } from '../../../lib/checkpoint/naming.ts';
import type { TaskId } from '../../../lib/checkpoint/types.ts';
import { EmbeddedCheckpointDriver, type SavepointResult } from '../../../lib/runtime/checkpoint-driver/embedded-driver.ts';
import { JobNotRunningError, SavepointFailedError } from '../../../lib/runtime/control/control-errors.ts';
import { FileCheckpointStorage, FileSavepointStorage, SnapshotDirectory, encodeTaskSnapshot } from '../../../lib/storage/index.ts';

const TASKS: TaskId[] = [
  { vertex: 0, subtask: 0 },
  { vertex: 0, subtask: 1 },
  { vertex: 1, subtask: 0 },
];

let root: string;
let storage: FileCheckpointStorage;
let savepoints: FileSavepointStorage;
/** The fake tasks' writes still running: a test can end (driver stopped) while one is still writing its file. */
const writing = new Set<Promise<void>>();

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sluice-driver-sp-'));
  storage = new FileCheckpointStorage(join(root, 'chk'));
  savepoints = new FileSavepointStorage(join(root, 'sp'));
});
afterEach(async () => {
  // Removing the folder under a write that is still creating files in it fails with ENOTEMPTY.
  await Promise.allSettled([...writing]);
  writing.clear();
  await rm(root, { recursive: true, force: true });
});

interface Harness {
  driver: EmbeddedCheckpointDriver;
  triggered: BarrierElement[];
  notified: number[];
  events: string[];
  logs: string[];
}

/**
 * A driver whose tasks answer every barrier by writing their state and acknowledging, like the runtime's hubs;
 * `decline` makes one task decline instead.
 */
function start(options: { intervalMs?: number; decline?: boolean; beforeStop?: (s: SavepointResult) => Promise<void> } = {}): Harness {
  const h: Harness = { triggered: [], notified: [], events: [], logs: [], driver: undefined as unknown as EmbeddedCheckpointDriver };
  h.driver = new EmbeddedCheckpointDriver({
    options: { intervalMs: options.intervalMs ?? 60_000, retain: 1 },
    storage,
    savepoints,
    tasks: TASKS,
    sourceTasks: TASKS.filter((t) => t.vertex === 0),
    maxParallelism: 128,
    lastCheckpointId: 0,
    retainedCheckpointIds: [],
    log: (l) => h.logs.push(l),
    beforeStop: async (s) => {
      h.events.push(`beforeStop ${s.checkpointId}`);
      await options.beforeStop?.(s);
    },
    dispatch: {
      trigger: (barrier) => {
        h.triggered.push(barrier);
        for (const task of TASKS) {
          const write = (async () => {
            if (options.decline === true && task.vertex === 1) {
              h.driver.decline(barrier.checkpointId, task, 'snapshot failed');
              return;
            }
            const data = encodeTaskSnapshot({ ...task, operators: [{ nodeId: task.vertex, watermark: 0, operatorState: [barrier.checkpointId] }] });
            try {
              const written = await storage.writeTaskState(barrier.checkpointId, taskStateFileName(task), data);
              h.driver.ack(barrier.checkpointId, { task, vertexName: `v${task.vertex}`, ...written });
            } catch (err) {
              // As a hub does: a write that fails (the aborted checkpoint's directory was removed) declines.
              h.driver.decline(barrier.checkpointId, task, String(err));
            }
          })();
          writing.add(write);
          void write.finally(() => writing.delete(write));
        }
      },
      notifyComplete: (id) => {
        h.notified.push(id);
        h.events.push(`notify ${id}`);
      },
    },
  });
  return h;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('EmbeddedCheckpointDriver savepoints', () => {
  it('writes a savepoint into its own directory, keeps it out of checkpoint storage and retention, and does not notify sinks', async () => {
    const h = start({ intervalMs: 30 });
    const result = await h.driver.triggerSavepoint();
    expect(h.triggered.find((b) => b.checkpointId === result.checkpointId)?.savepoint).toBe(true);
    const dir = new SnapshotDirectory(result.path);
    const metadata = await dir.readMetadata();
    expect(metadata).toMatchObject({ checkpointId: result.checkpointId, savepoint: true, maxParallelism: 128 });
    await dir.verifyTaskFiles(metadata);
    // Periodic checkpoints continue; with retain 1 older ones are discarded, the savepoint never.
    for (const deadline = Date.now() + 10_000; h.notified.length < 2 && Date.now() < deadline; ) await sleep(10);
    await h.driver.stop();
    expect(h.notified.length).toBeGreaterThanOrEqual(2);
    expect(h.notified).not.toContain(result.checkpointId);
    expect(existsSync(result.path)).toBe(true);
    const staging = `chk-${String(result.checkpointId).padStart(10, '0')}`;
    expect(await readdir(join(root, 'chk'))).not.toContain(staging);
    expect((await storage.list()).every((c) => c.status === 'complete' && !c.metadata.savepoint)).toBe(true);
    const entry = h.driver.history().find((e) => e.checkpointId === result.checkpointId);
    expect(entry).toMatchObject({ savepoint: true, status: 'completed', path: result.path });
    expect(entry?.bytes).toBeGreaterThan(0);
  });

  it('stops after a stop savepoint: records it, notifies the sinks, then triggers and completes nothing more', async () => {
    const h = start({ intervalMs: 20 });
    const result = await h.driver.triggerSavepoint({ stop: true });
    expect(h.events.slice(-2)).toEqual([`beforeStop ${result.checkpointId}`, `notify ${result.checkpointId}`]);
    expect(h.driver.stoppedWithSavepoint).toEqual(result);
    const triggered = h.triggered.length;
    await sleep(120);
    expect(h.triggered.length).toBe(triggered);
    expect(h.notified[h.notified.length - 1]).toBe(result.checkpointId);
    await expect(h.driver.triggerSavepoint()).rejects.toBeInstanceOf(JobNotRunningError);
    await h.driver.stop();
  });

  it('does not stop when recording the stop fails, and the sinks are not told to commit the savepoint', async () => {
    const h = start({
      beforeStop: async () => {
        throw new Error('disk full');
      },
    });
    const stop = h.driver.triggerSavepoint({ stop: true });
    await expect(stop).rejects.toBeInstanceOf(SavepointFailedError);
    await expect(stop).rejects.toThrow(/was not stopped: disk full/);
    expect(h.notified).toEqual([]);
    expect(h.driver.stoppedWithSavepoint).toBeUndefined();
    const next = await h.driver.triggerSavepoint();
    expect(existsSync(next.path)).toBe(true);
    await h.driver.stop();
  });

  it('rejects a savepoint that a task declined', async () => {
    const h = start({ decline: true });
    await expect(h.driver.triggerSavepoint()).rejects.toThrow(SavepointFailedError);
    expect(await readdir(join(root, 'sp')).catch(() => [])).toEqual([]);
    await h.driver.stop();
  });

  it('rejects savepoints still pending when the driver stops', async () => {
    const h = start();
    h.driver.ack = () => {}; // tasks never acknowledge
    const pending = h.driver.triggerSavepoint();
    await sleep(20);
    await h.driver.stop();
    await expect(pending).rejects.toBeInstanceOf(JobNotRunningError);
  });

  it('carries history and savepoint paths over to the next attempt', async () => {
    const first = start();
    const result = await first.driver.triggerSavepoint();
    await first.driver.stop();
    const next = new EmbeddedCheckpointDriver({
      options: { intervalMs: 60_000 },
      storage,
      savepoints,
      tasks: TASKS,
      sourceTasks: [],
      maxParallelism: 128,
      lastCheckpointId: first.driver.lastCheckpointId,
      retainedCheckpointIds: [],
      history: first.driver.historyState,
      savepointPaths: first.driver.savepointPaths,
      log: () => {},
      dispatch: { trigger: () => {}, notifyComplete: () => {} },
    });
    expect(next.history()).toEqual([expect.objectContaining({ checkpointId: result.checkpointId, path: result.path })]);
    await next.stop();
  });
});
