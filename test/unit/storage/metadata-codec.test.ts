import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { CHECKPOINT_FORMAT_VERSION } from '../../../lib/checkpoint/types.ts';
import type { CheckpointMetadata } from '../../../lib/checkpoint/types.ts';
import { CheckpointCorruptError, decodeMetadata, encodeMetadata } from '../../../lib/storage/index.ts';

const metadata: CheckpointMetadata = {
  version: CHECKPOINT_FORMAT_VERSION,
  checkpointId: 12,
  savepoint: false,
  triggeredAt: 1_700_000_000_000,
  completedAt: 1_700_000_000_250,
  maxParallelism: 128,
  parallelism: { 0: 1, 1: 2 },
  tasks: [
    { task: { vertex: 0, subtask: 0 }, vertexName: 'Source: transactions', path: 'chk-0000000012/task-0-0.state', bytes: 10, sha256: 'a'.repeat(64) },
    { task: { vertex: 1, subtask: 1 }, vertexName: 'Window → Sink', path: 'chk-0000000012/task-1-1.state', bytes: 0, sha256: 'b'.repeat(64) },
  ],
  finishedTasks: [{ vertex: 0, subtask: 1 }],
  operators: [
    { nodeId: 0, vertex: 0, name: 'transactions', stateful: true, meaning: { operator: 'source' } },
    { nodeId: 2, vertex: 1, name: 'account totals', stateful: true, meaning: { operator: 'window', sizeMs: 10_000, stateVersion: 2 } },
  ],
};

function corruptReason(bytes: Uint8Array, expectedId?: number): string {
  try {
    decodeMetadata(bytes, '/ck/chk-0000000012/_metadata', expectedId);
  } catch (error) {
    expect(error).toBeInstanceOf(CheckpointCorruptError);
    expect((error as Error).message).toContain('/ck/chk-0000000012/_metadata');
    return (error as Error).message;
  }
  throw new Error('expected the metadata to be rejected');
}

function reencode(edit: (m: Record<string, unknown>) => void): Uint8Array {
  const copy = JSON.parse(JSON.stringify(metadata)) as Record<string, unknown>;
  edit(copy);
  return encodeMetadata(copy as unknown as CheckpointMetadata);
}

describe('checkpoint metadata codec', () => {
  it('round-trips and is readable text with a header and a checksum line', () => {
    const bytes = encodeMetadata(metadata);
    expect(decodeMetadata(bytes, 'm', 12)).toEqual(metadata);
    const text = Buffer.from(bytes).toString('utf8');
    expect(text.startsWith(`SLUICE CHECKPOINT METADATA v${CHECKPOINT_FORMAT_VERSION}\n{`)).toBe(true);
    expect(text).toMatch(/\nsha256:[0-9a-f]{64}\n$/);
  });

  it('rejects a metadata file found under another checkpoint id', () => {
    expect(corruptReason(encodeMetadata(metadata), 13)).toContain('checkpoint 12, not 13');
  });

  it('rejects an unsupported version with a message saying so', () => {
    const text = Buffer.from(encodeMetadata(metadata)).toString('utf8').replace(/^SLUICE CHECKPOINT METADATA v1/, 'SLUICE CHECKPOINT METADATA v9');
    expect(corruptReason(Buffer.from(text))).toContain('version 9 is not supported');
  });

  it('rejects well-checksummed bodies of the wrong shape', () => {
    expect(corruptReason(reencode((m) => { m.tasks = 'none'; }))).toContain('"tasks"');
    expect(corruptReason(reencode((m) => { m.maxParallelism = 0; }))).toContain('maxParallelism');
    expect(corruptReason(reencode((m) => { (m.tasks as { sha256: string }[])[0]!.sha256 = 'xyz'; }))).toContain('task entry #0');
    // A path that escapes the storage, or names another task's file.
    expect(corruptReason(reencode((m) => { (m.tasks as { path: string }[])[0]!.path = '../../etc/passwd'; }))).toContain('#0');
    expect(corruptReason(reencode((m) => { (m.tasks as { path: string }[])[1]!.path = 'chk-0000000012/task-0-0.state'; }))).toContain('#1');
    expect(corruptReason(reencode((m) => { m.finishedTasks = [{ vertex: -1, subtask: 0 }]; }))).toContain('finishedTasks');
    expect(corruptReason(reencode((m) => { m.operators = {}; }))).toContain('"operators"');
    expect(corruptReason(reencode((m) => { (m.operators as { meaning: unknown }[])[1]!.meaning = { sizeMs: [1] }; }))).toContain('operator entry #1');
    expect(corruptReason(reencode((m) => { (m.operators as { stateful: unknown }[])[0]!.stateful = 'yes'; }))).toContain('operator entry #0');
  });

  it('rejects every flipped byte and every truncation (property)', () => {
    const good = Buffer.from(encodeMetadata(metadata));
    fc.assert(
      fc.property(fc.nat(good.length - 1), fc.integer({ min: 1, max: 255 }), fc.boolean(), (at, mask, truncate) => {
        const damaged = Buffer.from(good);
        if (!truncate) damaged.writeUInt8(damaged.readUInt8(at) ^ mask, at);
        corruptReason(truncate ? damaged.subarray(0, at) : damaged);
      }),
      { numRuns: 500 },
    );
  });
});
