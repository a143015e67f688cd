import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { afterAll, beforeAll } from 'vitest';
import { awsClientConfig } from '../../../lib/connectors/aws/client-config.ts';
import { kinesisApi, type KinesisApi } from '../../../lib/connectors/aws/kinesis/index.ts';
import { createStream, startKinesisEmulator, type KinesisEmulator } from './kinesis-emulator.ts';

/** What a Kinesis test file works with; the getters are valid inside tests and hooks, once the emulator is up. */
export interface KinesisTestSetup {
  readonly emu: KinesisEmulator;
  /** An SDK client on the emulator, for the harness helpers (createStream, putRecords, readStream, ...). */
  readonly client: KinesisClient;
  /** The connector's API over `client`, to wrap when a test injects faults. */
  readonly api: KinesisApi;
  /** Creates a stream named `<prefix>-<n>`, n counting up across the file so that no two tests share one. */
  newStream(prefix: string, shards: number): Promise<string>;
  /** A fresh temporary folder, removed after the file's tests. */
  tempDir(prefix?: string): string;
}

/** Starts one Kinesis emulator for the calling test file (beforeAll) and stops it and removes its folders (afterAll). */
export function useKinesisEmulator(): KinesisTestSetup {
  let emu: KinesisEmulator | undefined;
  let client: KinesisClient | undefined;
  let api: KinesisApi | undefined;
  let streams = 0;
  const dirs: string[] = [];
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the Kinesis emulator is not started yet (use it inside tests or hooks)');
    return value;
  };

  beforeAll(async () => {
    emu = await startKinesisEmulator();
    client = new KinesisClient(awsClientConfig('kinesis', emu.clientConfig));
    api = kinesisApi(client);
  });
  afterAll(async () => {
    client?.destroy();
    await emu?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  return {
    get emu() {
      return started(emu);
    },
    get client() {
      return started(client);
    },
    get api() {
      return started(api);
    },
    async newStream(prefix, shards) {
      const name = `${prefix}-${++streams}`;
      await createStream(started(client), name, shards);
      return name;
    },
    tempDir(prefix = 'sluice-kinesis-') {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
  };
}

export interface NumberedEvent {
  k: string;
  n: number;
}

/**
 * `count` events over `keys` keys named `<tag><i % keys>`, each numbered per key from `next` (which is advanced),
 * so that order and completeness per key can be checked on the other side.
 */
export function numberedEvents(count: number, keys: number, tag = 'k', next = new Map<string, number>()): { key: string; data: NumberedEvent }[] {
  const out: { key: string; data: NumberedEvent }[] = [];
  for (let i = 0; i < count; i++) {
    const k = `${tag}${i % keys}`;
    const n = next.get(k) ?? 0;
    next.set(k, n + 1);
    out.push({ key: k, data: { k, n } });
  }
  return out;
}
