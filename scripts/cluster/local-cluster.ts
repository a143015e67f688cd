// A whole cluster job on this machine: kinesalite, DynamoDB Local and s3rver on 127.0.0.1, `sluice aws init`, the
// coordinator's state machines in this process (the ASL files run by the local Step Functions runner, every Task
// bound to its real handler) and W `sluice worker` child processes on a shared state dir standing in for EFS.
// Used by `npm run dev:cluster` (scripts/cluster/dev-cluster.ts) and by test/cluster/*. DynamoDB Local listens on
// every interface: callers run inside a private network namespace (the test harness, or dev-cluster's re-exec).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { ensureTable } from '../../lib/connectors/aws/dynamodb/ensure-table.ts';
import { DEFAULT_SINK_COMMIT_REGISTRY } from '../../lib/connectors/aws/cluster/sink-commit-registry.ts';
import { LocalStepFunctions, type LocalRunStats } from '../../functions/coordinator/local/local-step-functions.ts';
import { useSettings } from '../../functions/coordinator/settings.ts';
import { BUCKET, COMMIT_TABLE, startExampleStack, type ExampleStack } from '../../test/harness/aws/example-stack.ts';
import { createStream, putRecords } from '../../test/harness/aws/kinesis-emulator.ts';
import { emptyCounts, type AwsCallCounts } from './aws-call-counts.ts';
import { startCountingProxy, type CountingProxy } from './counting-proxy.ts';
import { DirWriteMeter } from './dir-write-meter.ts';

export const JOB_PATH = fileURLToPath(new URL('../../examples/cluster-account-totals.ts', import.meta.url));
/** The exchange job: totals per merchant from a stream partitioned by account (its keyBy crosses slots). */
export const EXCHANGE_JOB_PATH = fileURLToPath(new URL('../../examples/cluster-merchant-totals.ts', import.meta.url));
const SLUICE = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));

export interface LocalClusterOptions {
  /** Slots (`sluice aws init --parallelism`). @default 2 */
  readonly parallelism?: number;
  /** Shards of the input stream. @default 2 */
  readonly shards?: number;
  /** Workers' `--lease-duration-ms`: failover after about one and a third of it. @default 3000 */
  readonly leaseDurationMs?: number;
  /** `--checkpoint-interval-ms` of the job. @default 1000 */
  readonly checkpointIntervalMs?: number;
  /** Workers' `--control-poll-ms`. @default 100 */
  readonly controlPollMs?: number;
  /** How long the local state machines wait in Wait states (the ASL's own waits are seconds). @default 100 */
  readonly waitMs?: number;
  /**
   * Run the exchange job (examples/cluster-merchant-totals.ts) instead of the aligned one: an internal stream of P
   * shards is created and passed as --exchange-stream to init and the workers; the table holds totals per merchant.
   * @default false
   */
  readonly exchange?: boolean;
  /**
   * Put a counting proxy in front of each emulator and point every process (workers, the CLI, the coordinator's
   * clients) at it: `calls` then holds every AWS call of the job, and `stateDirBytesWritten()` measures the state
   * dir. The cluster's own feeding and table reads go to the emulators directly. @default false
   */
  readonly countCalls?: boolean;
  /**
   * Give each worker its own state dir instead of one shared dir standing in for EFS: a slot taken from another
   * worker then cannot reuse its RocksDB databases and restores from S3. @default false
   */
  readonly stateDirPerWorker?: boolean;
  /** Every worker event and coordinator log line, as it happens. */
  readonly onEvent?: (source: string, event: Record<string, unknown>) => void;
  /** Cycles executions a supervisor execution runs before it continues as new (its input `maxChildren`). @default the ASL's (300) */
  readonly maxChildren?: number;
  /** How long one cycles execution runs (SLUICE_CYCLE_SECONDS). @default 240 */
  readonly cycleSeconds?: number;
  /**
   * Test-only fault injection: called after each DynamoDB call of the coordinator's handlers. Returning true after
   * a call that succeeded makes the handler die right there (CoordinatorCrashError thrown from the call: its effect
   * stays, nothing after it in the handler runs), as a Lambda killed between two calls; the state machine's Retry
   * runs it again. A failed call (`error` set) keeps its own error.
   */
  readonly coordinatorFault?: (call: CoordinatorCall) => boolean;
}

/** A DynamoDB call of a coordinator handler that succeeded, as `coordinatorFault` sees it. */
export interface CoordinatorCall {
  /** The SDK command's name, e.g. `TransactWriteItemsCommand`. */
  readonly command: string;
  readonly input: Record<string, unknown>;
  /** The error's name when the call failed. */
  readonly error?: string;
}

/** Options of one worker process. */
export interface WorkerOptions {
  /** Extra environment, e.g. a test's SLUICE_CRASH_AT. */
  readonly env?: Record<string, string>;
}

export interface Transaction {
  readonly account: string;
  /** Only in the exchange job's input (withMerchants). */
  readonly merchant?: string;
  readonly amountCents: number;
  readonly ts: number;
}

export interface Totals {
  readonly count: number;
  readonly totalCents: number;
}

/** One line of a log, with the time this process saw it. */
export interface Logged {
  readonly at: number;
  readonly source: string;
  readonly event: Record<string, unknown>;
}

export interface WorkerProcess {
  readonly id: string;
  readonly child: ChildProcess;
  readonly stderr: string[];
  /** Resolves when the process ended: its exit code, or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export const STREAM = 'transactions';
export const TABLE = 'account-totals';
export const CONTROL_TABLE = 'sluice-control';
export const EXCHANGE_STREAM = 'sluice-exchange';
export const MERCHANT_TABLE = 'merchant-totals';

export class LocalCluster {
  /** Worker events and coordinator log lines, in the order this process saw them. */
  readonly log: Logged[] = [];
  readonly workers = new Map<string, WorkerProcess>();
  readonly jobId = 'totals';
  /** Workers' and the config's checkpoint dir: workers take no parameters (the control table fences their writes). */
  readonly checkpointDir = `s3://${BUCKET}/totals`;
  /** Every AWS call through the counting proxies (all zero without `countCalls`). */
  readonly calls: AwsCallCounts = emptyCounts();
  private readonly stateDir: string;
  private readonly tempDir: string;
  private runner: Promise<unknown> | undefined;
  private readonly ownClients: DynamoDBClient[] = [];
  private sfn: LocalStepFunctions | undefined;
  private proxies: Record<'kinesis' | 's3' | 'dynamodb', CountingProxy> | undefined;
  private coordinatorClients: { dynamo: DynamoDBClient; s3: S3Client } | undefined;
  private meter: DirWriteMeter | undefined;

  private constructor(
    readonly stack: ExampleStack,
    readonly options: Required<Omit<LocalClusterOptions, 'onEvent' | 'maxChildren' | 'coordinatorFault'>> &
      Pick<LocalClusterOptions, 'onEvent' | 'maxChildren' | 'coordinatorFault'>,
  ) {
    this.tempDir = mkdtempSync(join(tmpdir(), 'sluice-cluster-'));
    this.stateDir = join(this.tempDir, 'efs');
  }

  /** The `--state-dir` of worker `id`: the shared one, or its own with `stateDirPerWorker`. */
  stateDirOf(id: string): string {
    return this.options.stateDirPerWorker ? join(this.tempDir, `state-${id}`) : this.stateDir;
  }

  /** What the local Step Functions runner did so far (state transitions, handler calls and time). */
  stepFunctionsStats(): LocalRunStats {
    const stats = this.sfn?.stats ?? { supervisorExecutions: [], cyclesExecutions: 0, supervisorTransitions: 0, cyclesTransitions: 0, handlerCalls: {}, handlerMs: {} };
    return JSON.parse(JSON.stringify(stats)) as LocalRunStats;
  }

  /** Bytes written under the workers' state dirs so far (needs `countCalls`; 0 without). */
  async stateDirBytesWritten(): Promise<number> {
    return (await this.meter?.bytesWritten()) ?? 0;
  }

  /** Starts the emulators, creates the stream and tables, deploys the job and starts the coordinator; no workers yet. */
  static async start(options: LocalClusterOptions = {}): Promise<LocalCluster> {
    const stack = await startExampleStack();
    const cluster = new LocalCluster(stack, {
      countCalls: options.countCalls ?? false,
      stateDirPerWorker: options.stateDirPerWorker ?? false,
      parallelism: options.parallelism ?? 2,
      shards: options.shards ?? 2,
      leaseDurationMs: options.leaseDurationMs ?? 3000,
      checkpointIntervalMs: options.checkpointIntervalMs ?? 1000,
      controlPollMs: options.controlPollMs ?? 100,
      waitMs: options.waitMs ?? 100,
      exchange: options.exchange ?? false,
      onEvent: options.onEvent,
      maxChildren: options.maxChildren,
      cycleSeconds: options.cycleSeconds ?? 240,
      coordinatorFault: options.coordinatorFault,
    });
    try {
      await cluster.setUp();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** Environment of every process: the emulators' endpoints, dummy credentials (s3rver's own key), the commit table. */
  get env(): Record<string, string> {
    const proxied: Record<string, string> =
      this.proxies === undefined
        ? {}
        : { AWS_ENDPOINT_URL_KINESIS: this.proxies.kinesis.endpoint, AWS_ENDPOINT_URL_S3: this.proxies.s3.endpoint, AWS_ENDPOINT_URL_DYNAMODB: this.proxies.dynamodb.endpoint };
    return { ...this.stack.env, ...proxied, SLUICE_JOB_ID: this.jobId, SLUICE_CONTROL_TABLE: CONTROL_TABLE };
  }

  private async startCounting(): Promise<void> {
    const [kinesis, s3, dynamodb] = await Promise.all([
      startCountingProxy('kinesis', this.stack.kinesis.endpoint, this.calls),
      startCountingProxy('s3', this.stack.s3.endpoint, this.calls),
      startCountingProxy('dynamodb', this.stack.dynamodb.endpoint, this.calls),
    ]);
    this.proxies = { kinesis, s3, dynamodb };
    this.coordinatorClients = {
      dynamo: new DynamoDBClient({ ...this.stack.dynamodb.clientConfig, endpoint: dynamodb.endpoint, requestHandler: new NodeHttpHandler() }),
      s3: new S3Client({ ...this.stack.s3.clientConfig, endpoint: s3.endpoint, forcePathStyle: true, requestHandler: new NodeHttpHandler() }),
    };
    this.meter = new DirWriteMeter(() => [this.tempDir].flatMap((root) => [join(root, 'efs'), ...[...this.workers.keys()].map((id) => join(root, `state-${id}`))]));
    this.meter.start();
  }

  private jobFlags(): string[] {
    return ['--stream', STREAM, '--table', this.tableName, ...(this.options.exchange ? ['--exchange-stream', EXCHANGE_STREAM] : [])];
  }

  /** The job file the cluster runs. */
  get jobPath(): string {
    return this.options.exchange ? EXCHANGE_JOB_PATH : JOB_PATH;
  }

  /** The sink table, and the attribute its rows are keyed by. */
  get tableName(): string {
    return this.options.exchange ? MERCHANT_TABLE : TABLE;
  }

  private get tableKey(): 'account' | 'merchant' {
    return this.options.exchange ? 'merchant' : 'account';
  }

  private async setUp(): Promise<void> {
    if (this.options.countCalls) await this.startCounting();
    const client = this.stack.dynamodb.client;
    await Promise.all([
      createStream(this.stack.kinesisClient, STREAM, this.options.shards),
      // The exchange stream has exactly P shards: shard s is slot s's input.
      ...(this.options.exchange ? [createStream(this.stack.kinesisClient, EXCHANGE_STREAM, this.options.parallelism)] : []),
      ensureTable({ tableName: this.tableName, partitionKey: { name: this.tableKey, type: 'S' }, client }),
      ensureTable({ tableName: `${this.tableName}-markers`, partitionKey: { name: 'pk', type: 'S' }, client }),
    ]);
    const init = await this.sluice([
      'aws', 'init', this.jobPath,
      '--job-id', this.jobId,
      '--control-table', CONTROL_TABLE,
      '--checkpoint-dir', this.checkpointDir,
      '--parallelism', String(this.options.parallelism),
      '--checkpoint-interval-ms', String(this.options.checkpointIntervalMs),
      '--lease-duration-ms', String(this.options.leaseDurationMs),
      ...this.jobFlags(),
    ]);
    if (init.code !== 0) throw new LocalClusterError(`sluice aws init exited with ${init.code}: ${init.stderr}`);
    // The coordinator handlers run here, as Lambda would run them: with the emulators' clients and endpoints.
    useSettings({
      jobId: this.jobId,
      controlTable: CONTROL_TABLE,
      // The coordinator commits metadata through the S3 storage's commit table (SLUICE_CHECKPOINT_DIR in Lambda).
      checkpointDir: `${this.checkpointDir}?commitTable=${COMMIT_TABLE}`,
      ackPollMs: 100,
      cycleSeconds: this.options.cycleSeconds,
      dynamo: this.coordinatorDynamo(),
      s3: this.coordinatorClients?.s3 ?? (this.stack.s3.client as S3Client),
      registry: DEFAULT_SINK_COMMIT_REGISTRY,
      now: () => Date.now(),
      log: (event) => this.record('coordinator', event),
    });
    this.sfn = await LocalStepFunctions.load({
      waitMs: this.options.waitMs,
      ...(this.options.maxChildren === undefined ? {} : { input: { maxChildren: this.options.maxChildren } }),
    });
    this.runner = this.sfn.run().catch((err: unknown) => {
      this.record('coordinator', { event: 'runner-failed', error: err instanceof Error ? err.message : String(err) });
    });
  }

  /** The emulator's client, or with `coordinatorFault` a client of its own whose calls the fault sees. */
  private coordinatorDynamo(): DynamoDBClient {
    const fault = this.options.coordinatorFault;
    if (fault === undefined) return this.coordinatorClients?.dynamo ?? this.stack.dynamodb.client;
    // Through the counting proxy when calls are counted, like the coordinator's other clients.
    const endpoint = this.proxies?.dynamodb.endpoint ?? this.stack.dynamodb.clientConfig.endpoint;
    const client = new DynamoDBClient({ ...this.stack.dynamodb.clientConfig, endpoint, requestHandler: new NodeHttpHandler() });
    this.ownClients.push(client);
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const call = { command: context.commandName ?? 'unknown', input: args.input as Record<string, unknown> };
        let out: Awaited<ReturnType<typeof next>>;
        try {
          out = await next(args);
        } catch (err) {
          fault({ ...call, error: err instanceof Error ? err.name : String(err) });
          throw err;
        }
        if (fault(call)) {
          this.record('coordinator', { event: 'injected-crash', command: call.command });
          throw new CoordinatorCrashError(`injected coordinator crash after ${call.command} succeeded`);
        }
        return out;
      },
      { step: 'initialize', name: 'localClusterCoordinatorFault' },
    );
    return client;
  }

  /** What the local Step Functions runner did so far: supervisor executions, handler calls. */
  get coordinatorStats(): LocalRunStats {
    if (this.sfn === undefined) throw new LocalClusterError('the coordinator is not running');
    return this.sfn.stats;
  }

  private record(source: string, event: Record<string, unknown>): void {
    this.log.push({ at: Date.now(), source, event });
    this.options.onEvent?.(source, event);
  }

  /** Runs the sluice CLI to its end. */
  async sluice(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [SLUICE, ...args], { env: { ...process.env, ...this.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
    return { code, stdout, stderr };
  }

  /** Spawns `sluice worker` (id `w<n>` unless given); its JSON event lines go to the log as `worker:<id>`. */
  startWorker(id = `w${this.workers.size + 1}`, options: WorkerOptions = {}): WorkerProcess {
    const args = [
      SLUICE, 'worker', this.jobPath,
      '--job-id', this.jobId,
      '--control-table', CONTROL_TABLE,
      '--checkpoint-dir', this.checkpointDir,
      '--state-dir', this.stateDirOf(id),
      '--worker-id', id,
      '--lease-duration-ms', String(this.options.leaseDurationMs),
      '--control-poll-ms', String(this.options.controlPollMs),
      ...this.jobFlags(),
    ];
    // Each worker has its own local temp dir (its "task disk"); the state dir is shared, as EFS would be.
    const child = spawn(process.execPath, args, {
      env: { ...process.env, ...this.env, TMPDIR: join(this.tempDir, `tmp-${id}`), ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stderr: string[] = [];
    let partial = '';
    child.stdout!.on('data', (d: Buffer) => {
      const lines = (partial + d.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        try {
          this.record(`worker:${id}`, JSON.parse(line) as Record<string, unknown>);
        } catch {
          this.record(`worker:${id}`, { event: 'stdout', line });
        }
      }
    });
    child.stderr!.on('data', (d: Buffer) => stderr.push(d.toString('utf8')));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.on('exit', (code, signal) => {
        this.record(`worker:${id}`, { event: 'exit', code, signal, ...(code === 0 ? {} : { stderr: stderr.join('').slice(-2000) }) });
        resolve({ code, signal });
      });
    });
    const worker: WorkerProcess = { id, child, stderr, exited };
    this.workers.set(id, worker);
    return worker;
  }

  /** Events of one worker (or all workers), optionally of one kind. */
  workerEvents(kind?: string, id?: string): Logged[] {
    return this.log.filter((l) => (id === undefined ? l.source.startsWith('worker:') : l.source === `worker:${id}`) && (kind === undefined || l.event['event'] === kind));
  }

  /** Slots `id` runs now by its own log: started and not since released or lost (at that epoch). */
  heldSlots(id: string): number[] {
    const events = this.workerEvents(undefined, id);
    const gone = (slot: unknown, epoch: unknown): boolean =>
      events.some((l) => ['released', 'lease-lost', 'slot-failed'].includes(String(l.event['event'])) && l.event['slot'] === slot && l.event['epoch'] === epoch);
    const held = events.filter((l) => l.event['event'] === 'slot-started' && !gone(l.event['slot'], l.event['epoch']));
    return [...new Set(held.map((l) => l.event['slot'] as number))];
  }

  coordinatorEvents(kind?: string): Logged[] {
    return this.log.filter((l) => l.source === 'coordinator' && (kind === undefined || l.event['event'] === kind));
  }

  /** The log without the routine lines (acks, triggers, completions), and workers' stderr: what a failed test shows. */
  describe(limit = 60): string {
    const routine = new Set(['ack', 'triggered', 'checkpoint-completed', 'sinks-committed']);
    const lines = this.log.filter((l) => !routine.has(String(l.event['event']))).map((l) => `${new Date(l.at).toISOString()} ${l.source} ${JSON.stringify(l.event)}`);
    const counts = `completed ${this.coordinatorEvents('checkpoint-completed').length}, acks ${this.workerEvents('ack').length}`;
    const stderr = [...this.workers.values()].map((w) => `${w.id} stderr: ${w.stderr.join('').slice(-1500)}`);
    return [counts, ...lines.slice(-limit), ...stderr].join('\n');
  }

  /** waitUntil, with the cluster's log (describe) in the error. */
  until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
    return waitUntil(what, condition, timeoutMs).catch((err: unknown) => {
      throw new LocalClusterError(`${String(err)}\n${this.describe()}`);
    });
  }

  /** Polls until the sink table equals `reference`; the error names the first differences and shows the log. */
  async untilTableEquals(reference: ReadonlyMap<string, Totals>, timeoutMs: number): Promise<void> {
    let last: string[] = [];
    await waitUntil(
      'the table to equal the reference',
      async () => {
        last = tableDifferences(reference, await this.table());
        return last.length === 0;
      },
      timeoutMs,
    ).catch((err: unknown) => {
      throw new LocalClusterError(`${String(err)}; differences: ${last.slice(0, 5).join('; ')}\n${this.describe()}`);
    });
  }

  /** Puts the transactions, partition key = account (what the aligned keyBy requires); returns each one's shard. */
  async feed(transactions: readonly Transaction[], stream = STREAM): Promise<{ shardId: string; sequenceNumber: string }[]> {
    const records = transactions.map((t) => ({ key: t.account, data: Buffer.from(JSON.stringify(t), 'utf8') }));
    return putRecords(this.stack.kinesisClient, stream, records);
  }

  /** The sink table: account (merchant for the exchange job) -> totals (commit markers live in their own table). */
  async table(name = this.tableName): Promise<Map<string, Totals>> {
    const out = new Map<string, Totals>();
    const key = this.tableKey;
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.stack.dynamodb.client.send(new ScanCommand({ TableName: name, ExclusiveStartKey: start, ConsistentRead: true }));
      for (const item of page.Items ?? []) {
        const row = unmarshall(item) as Record<string, unknown>;
        out.set(String(row[key]), { count: Number(row['count']), totalCents: Number(row['totalCents']) });
      }
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return out;
  }

  /** Stops the coordinator, SIGTERMs every running worker (returns their exits) and the emulators; removes temp dirs. */
  async stop(): Promise<Record<string, { code: number | null; signal: NodeJS.Signals | null }>> {
    const exits: Record<string, { code: number | null; signal: NodeJS.Signals | null }> = {};
    await Promise.all(
      [...this.workers.values()].map(async (w) => {
        if (w.child.exitCode === null && w.child.signalCode === null) {
          w.child.kill('SIGCONT');
          w.child.kill('SIGTERM');
        }
        const killer = setTimeout(() => w.child.kill('SIGKILL'), 30_000);
        exits[w.id] = await w.exited;
        clearTimeout(killer);
      }),
    );
    this.sfn?.stop();
    await this.runner;
    useSettings(undefined);
    for (const client of this.ownClients) client.destroy();
    await this.meter?.stop();
    this.coordinatorClients?.dynamo.destroy();
    this.coordinatorClients?.s3.destroy();
    await Promise.all(Object.values(this.proxies ?? {}).map((p) => p.stop()));
    await this.stack.stop();
    rmSync(this.tempDir, { recursive: true, force: true });
    return exits;
  }
}

/** What a plain loop makes of the input: the totals the table must hold once everything is read and committed. */
export function referenceTotals(transactions: readonly Transaction[]): Map<string, Totals> {
  const out = new Map<string, Totals>();
  for (const t of transactions) {
    const before = out.get(t.account) ?? { count: 0, totalCents: 0 };
    out.set(t.account, { count: before.count + 1, totalCents: before.totalCents + t.amountCents });
  }
  return out;
}

/** Gives each transaction a merchant (deterministic, independent of its account): the exchange job's input. */
export function withMerchants(transactions: readonly Transaction[], merchants: number): Transaction[] {
  return transactions.map((t, i) => ({ ...t, merchant: `m-${(Math.imul(i, 2654435761) >>> 8) % merchants}` }));
}

/** What a plain loop makes of the exchange job's input: totals per merchant. */
export function referenceMerchantTotals(transactions: readonly Transaction[]): Map<string, Totals> {
  return referenceTotals(transactions.map((t) => ({ ...t, account: t.merchant ?? '' })));
}

/** Rows of `actual` that differ from `expected` (missing, extra or other values); empty when equal. */
export function tableDifferences(expected: ReadonlyMap<string, Totals>, actual: ReadonlyMap<string, Totals>): string[] {
  const out: string[] = [];
  for (const [account, want] of expected) {
    const got = actual.get(account);
    if (got === undefined) out.push(`${account}: missing`);
    else if (got.count !== want.count || got.totalCents !== want.totalCents) out.push(`${account}: ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
  }
  for (const account of actual.keys()) if (!expected.has(account)) out.push(`${account}: not in the input`);
  return out;
}

/** Deterministic transactions: `accounts` accounts, amounts from a small linear congruential generator. */
export function generateTransactions(count: number, accounts: number, seed = 42, t0 = Date.UTC(2026, 10, 1)): Transaction[] {
  let state = seed >>> 0;
  const next = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state;
  };
  // High bits: the low bits of consecutive LCG outputs alternate (every other output would name only even accounts).
  return Array.from({ length: count }, (_, i) => ({ account: `a-${(next() >>> 8) % accounts}`, amountCents: ((next() >>> 8) % 20_000) - 2_000, ts: t0 + i * 5 }));
}

/** Polls `condition` until it holds (never relies on a fixed sleep); LocalClusterError naming `what` after `timeoutMs`. */
export async function waitUntil(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number, pollMs = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new LocalClusterError(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

export class LocalClusterError extends Error {
  override readonly name: string = 'LocalClusterError';
}

/** What `coordinatorFault` throws: the handler dies after a call that took effect. */
export class CoordinatorCrashError extends LocalClusterError {
  override readonly name = 'CoordinatorCrashError';
}

/** The p-th percentile (0..100) of `values`, nearest rank; undefined for none. */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Trigger-to-completion time of each completed checkpoint, from the coordinator's log. */
export function checkpointDurations(log: readonly Logged[]): number[] {
  const triggered = new Map<number, number>();
  const out: number[] = [];
  for (const l of log) {
    if (l.source !== 'coordinator') continue;
    const id = l.event['checkpointId'];
    if (typeof id !== 'number') continue;
    if (l.event['event'] === 'triggered' && !triggered.has(id)) triggered.set(id, l.at);
    if (l.event['event'] === 'checkpoint-completed') {
      const start = triggered.get(id);
      if (start !== undefined) out.push(l.at - start);
    }
  }
  return out;
}
