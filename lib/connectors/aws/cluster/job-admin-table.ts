import {
  BatchWriteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  type AttributeValue,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { CoordinatorState } from '../../../checkpoint/coordinator-protocol.ts';
import {
  CONTROL_TABLE_PARTITION_KEY as PK,
  CONTROL_TABLE_SORT_KEY as SK,
  ControlKeys,
  jobPartition,
  type ClusterConfigItem,
  type ControlItem,
  type CoordinatorItem,
  type LeaseItem,
  type RequestItem,
} from '../../../cluster/control-items.ts';
import { summarizeCoordinator, watchLeaseCounters, type ClusterJobStatus } from '../../../cluster/job-status.ts';
import { awsClientConfig, type AwsClientOverrides } from '../client-config.ts';
import { ensureTable } from '../dynamodb/ensure-table.ts';
import { forEachLimited } from '../for-each-limited.ts';
import { awsErrorName } from '../kinesis/errors.ts';
import { sleep } from '../kinesis/backoff.ts';
import { ClusterConfigConflictError, ClusterControlError, ClusterRequestFailedError } from './job-admin-errors.ts';

export interface JobAdminTableOptions {
  /** The control table (pk/sk strings), shared by every job of a deployment. */
  readonly tableName: string;
  readonly jobId: string;
  /** @default a client from `aws` and the SDK's default chains */
  readonly client?: DynamoDBClient;
  readonly aws?: AwsClientOverrides;
  /** @default Date.now */
  readonly now?: () => number;
}

/** What `init` did. */
export type InitOutcome =
  /** Wrote `config` (and created `control` and the leases that were missing). */
  | 'initialized'
  /** The same config was stored already: nothing changed except items that were missing. */
  | 'unchanged';

export interface InitOptions {
  /** Delete every item of the job's partition first (leases, acks, coordinator, requests, config). @default false */
  readonly fresh?: boolean;
  /** Create the table (on demand, pk/sk) when it is missing. @default true */
  readonly createTable?: boolean;
}

export interface StatusOptions {
  /**
   * Read the leases a second time this many ms after the first, to tell whose counter moves (a live owner renews
   * every third of the lease duration). 0 reads once. @default 0
   */
  readonly watchLeasesMs?: number;
}

export interface WaitOptions {
  /** Give up (ClusterControlError; the request stays queued) after this long. @default 600000 */
  readonly timeoutMs?: number;
  /** Between two reads of the request item. @default 1000 */
  readonly pollMs?: number;
}

/** Operator-side access to one job's control items: `sluice aws init|status|savepoint|stop`. */
export interface JobAdmin {
  init(config: ClusterConfigItem, options?: InitOptions): Promise<InitOutcome>;
  status(options?: StatusOptions): Promise<ClusterJobStatus>;
  /** Puts a `request#<id>` item (queued); the coordinator answers it. */
  request(kind: RequestItem['kind'], id: string, requestedBy?: string): Promise<RequestItem>;
  /** Polls the request until the coordinator marks it succeeded (returned) or failed (ClusterRequestFailedError). */
  waitForRequest(id: string, options?: WaitOptions): Promise<RequestItem>;
  close(): void;
}

const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: true } as const;
const DELETE_BATCH = 25;
const PUT_CONCURRENCY = 8;

/** The deployment settings of a config that a re-run of `init` must repeat exactly, with how to read them. */
const COMPARED: readonly [keyof ClusterConfigItem, string][] = [
  ['fingerprint', 'plan fingerprint'],
  ['parallelism', 'parallelism (P)'],
  ['maxParallelism', 'max parallelism'],
  ['checkpointDir', 'checkpoint dir'],
  ['exchangeStream', 'exchange stream'],
  ['restoreFrom', 'restore from'],
  ['checkpointing', 'checkpointing settings'],
];

/** What a re-run of `init` would change in a stored config, one phrase per field; empty when it is the same deployment. */
export function configDifferences(stored: ClusterConfigItem, wanted: ClusterConfigItem): string[] {
  const out: string[] = [];
  for (const [field, label] of COMPARED) {
    const a = canonicalJson(stored[field] ?? null);
    const b = canonicalJson(wanted[field] ?? null);
    if (a !== b) out.push(`${label}: stored ${short(a)}, now ${short(b)}`);
  }
  return out;
}

/** JSON with object keys sorted: a DynamoDB map does not keep the order its keys were written in. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function short(json: string): string {
  return json.length > 40 ? `${json.slice(0, 37)}...` : json;
}

function isConditionFailure(error: unknown): boolean {
  return awsErrorName(error) === 'ConditionalCheckFailedException';
}

/**
 * The control table as the operator's tools see it. Items are the plain objects of lib/cluster/control-items.ts,
 * marshalled at the top level beside `pk` = `job#<id>` and `sk`, as the workers and the coordinator read them.
 * Every write is conditional, so running a command twice (or two operators at once) changes nothing twice.
 */
export class JobAdminTable implements JobAdmin {
  private readonly client: DynamoDBClient;
  private readonly ownsClient: boolean;
  private readonly pk: string;
  private readonly now: () => number;

  constructor(private readonly options: JobAdminTableOptions) {
    this.ownsClient = options.client === undefined;
    this.client = options.client ?? new DynamoDBClient(awsClientConfig('dynamodb', options.aws));
    this.pk = jobPartition(options.jobId);
    this.now = options.now ?? Date.now;
  }

  close(): void {
    if (this.ownsClient) this.client.destroy();
  }

  /**
   * Writes the job's `config`, `control` and `lease#0..P-1` items. A stored config with the same settings makes
   * this a no-op (it only adds items that are missing); one with other settings is refused before anything is
   * written (ClusterConfigConflictError naming --fresh and --restore). `config` goes last, so its presence means
   * every other item exists: workers and handlers wait for it.
   */
  async init(config: ClusterConfigItem, options: InitOptions = {}): Promise<InitOutcome> {
    if (options.createTable ?? true) await this.ensureTable();
    if (options.fresh === true) await this.clearPartition();
    const stored = await this.get<ClusterConfigItem>(ControlKeys.config);
    if (stored !== undefined) this.refuseOther(stored, config);
    const control: ControlItem = { leaseGeneration: 0, sinkCommittedThrough: 0 };
    await this.putIfAbsent(ControlKeys.control, control);
    const slots = Array.from({ length: config.parallelism }, (_, slot) => slot);
    await forEachLimited(slots, PUT_CONCURRENCY, async (slot) => {
      const lease: LeaseItem = { slot, epoch: 0, counter: 0 };
      await this.putIfAbsent(ControlKeys.lease(slot), lease);
    });
    if (await this.putIfAbsent(ControlKeys.config, config)) return stored === undefined ? 'initialized' : 'unchanged';
    // Another init won the race: accept it only if it wrote the same settings.
    const winner = await this.get<ClusterConfigItem>(ControlKeys.config);
    if (winner !== undefined) this.refuseOther(winner, config);
    return 'unchanged';
  }

  async status(options: StatusOptions = {}): Promise<ClusterJobStatus> {
    const [config, control, coordinator, requests] = await Promise.all([
      this.get<ClusterConfigItem>(ControlKeys.config),
      this.get<ControlItem>(ControlKeys.control),
      this.get<{ execution: string; version: number; state: CoordinatorState | string }>(ControlKeys.coordinator),
      this.query<RequestItem>(ControlKeys.requestPrefix),
    ]);
    const watchMs = options.watchLeasesMs ?? 0;
    const first = await this.query<LeaseItem>(ControlKeys.leasePrefix);
    let leases = first;
    if (watchMs > 0) {
      const started = this.now();
      await sleep(watchMs);
      leases = watchLeaseCounters(first, await this.query<LeaseItem>(ControlKeys.leasePrefix), this.now() - started);
    }
    return {
      jobId: this.options.jobId,
      config,
      control,
      coordinator: coordinator === undefined ? undefined : summarizeCoordinator(coordinator),
      leases: [...leases].sort((a, b) => a.slot - b.slot),
      requests: [...requests].sort((a, b) => a.requestedAt - b.requestedAt),
    };
  }

  async request(kind: RequestItem['kind'], id: string, requestedBy?: string): Promise<RequestItem> {
    if ((await this.get<ClusterConfigItem>(ControlKeys.config)) === undefined) {
      throw new ClusterControlError(
        `job "${this.options.jobId}" has no config in table ${this.options.tableName}: deploy it with "sluice aws init" first`,
      );
    }
    const at = this.now();
    const item: RequestItem = { id, kind, status: 'queued', requestedAt: at, updatedAt: at, ...(requestedBy === undefined ? {} : { requestedBy }) };
    // Conditional: a retried put of the same id must not reset a request the coordinator already answered.
    if (!(await this.putIfAbsent(ControlKeys.request(id), item))) {
      const existing = await this.get<RequestItem>(ControlKeys.request(id));
      if (existing === undefined || existing.kind !== kind) {
        throw new ClusterControlError(`request id "${id}" of job "${this.options.jobId}" is taken by another request; use another id`);
      }
      return existing;
    }
    return item;
  }

  async waitForRequest(id: string, options: WaitOptions = {}): Promise<RequestItem> {
    const timeoutMs = options.timeoutMs ?? 600_000;
    const pollMs = options.pollMs ?? 1000;
    const deadline = this.now() + timeoutMs;
    for (;;) {
      const item = await this.get<RequestItem>(ControlKeys.request(id));
      if (item === undefined) throw new ClusterControlError(`request "${id}" of job "${this.options.jobId}" is gone from the control table`);
      if (item.status === 'succeeded') return item;
      if (item.status === 'failed') {
        throw new ClusterRequestFailedError(`${item.kind} request "${id}" of job "${this.options.jobId}" failed: ${item.error ?? 'no reason given'}`);
      }
      if (this.now() >= deadline) {
        throw new ClusterControlError(
          `${item.kind} request "${id}" of job "${this.options.jobId}" is still ${item.status} after ${timeoutMs} ms: is the coordinator running? The request stays queued; wait again or raise --timeout-ms`,
          { retriable: true },
        );
      }
      await sleep(Math.min(pollMs, Math.max(0, deadline - this.now())));
    }
  }

  /** One consistent read of a request item; undefined when there is none (the control state machine polls with it). */
  async readRequest(id: string): Promise<RequestItem | undefined> {
    return this.get<RequestItem>(ControlKeys.request(id));
  }

  /**
   * Resumes a halted job from its stop savepoint (see `ControlItem.resumed`). Idempotent per `requestId`; a job that
   * is not halted is refused (ClusterControlError, not retriable). The caller starts a supervisor execution.
   */
  async resume(requestId: string): Promise<NonNullable<ControlItem['resumed']>> {
    for (let attempt = 0; ; attempt++) {
      const [config, control, coordinator] = await Promise.all([
        this.get<ClusterConfigItem>(ControlKeys.config),
        this.get<ControlItem>(ControlKeys.control),
        this.get<Pick<CoordinatorItem, 'state'>>(ControlKeys.coordinator),
      ]);
      const job = `job "${this.options.jobId}" in table ${this.options.tableName}`;
      if (config === undefined || control === undefined) throw new ClusterControlError(`${job} has no config: deploy it with "sluice aws init" first`);
      const halted = control.halted;
      if (halted === undefined) {
        const resumed = control.resumed;
        // The same request again (a retried handler), or an earlier resume whose supervisor never took over: both
        // only need the supervisor started, which the caller does.
        if (resumed !== undefined && (resumed.requestId === requestId || coordinator?.state.status === 'halted')) return resumed;
        throw new ClusterControlError(
          `${job} is not stopped (its control item has no "halted"): there is nothing to resume. Stop it first with "sluice aws stop" or the control state machine's "stop"`,
        );
      }
      const resumed = { requestId, checkpointId: halted.checkpointId, savepointPath: halted.savepointPath, at: this.now() };
      try {
        await this.client.send(
          new TransactWriteItemsCommand({
            TransactItems: [
              {
                Update: {
                  TableName: this.options.tableName,
                  Key: this.key(ControlKeys.control),
                  // `completed` goes too: it is older than the savepoint, and a slot restores `completed` first.
                  UpdateExpression: 'SET #resumed = :resumed REMOVE #halted, #completed',
                  ConditionExpression: '#halted.checkpointId = :checkpoint',
                  ExpressionAttributeNames: { '#resumed': 'resumed', '#halted': 'halted', '#completed': 'completed' },
                  ExpressionAttributeValues: { ':resumed': { M: marshall(resumed, MARSHALL) }, ':checkpoint': { N: String(halted.checkpointId) } },
                },
              },
              {
                Update: {
                  TableName: this.options.tableName,
                  Key: this.key(ControlKeys.config),
                  UpdateExpression: 'SET #restoreFrom = :path',
                  ConditionExpression: 'attribute_exists(#pk)',
                  ExpressionAttributeNames: { '#restoreFrom': 'restoreFrom', '#pk': PK },
                  ExpressionAttributeValues: { ':path': { S: halted.savepointPath } },
                },
              },
            ],
          }),
        );
        return resumed;
      } catch (error) {
        // Another resume (or a new stop) changed `control` between the read and the write: decide again on what is there now.
        if (awsErrorName(error) === 'TransactionCanceledException' && attempt < 3) continue;
        throw this.failure('resume', error);
      }
    }
  }

  private refuseOther(stored: ClusterConfigItem, wanted: ClusterConfigItem): void {
    const found = configDifferences(stored, wanted);
    if (found.length === 0) return;
    throw new ClusterConfigConflictError(
      `job "${this.options.jobId}" in table ${this.options.tableName} is deployed with other settings (${found.join('; ')}). ` +
        'Stop it with a savepoint ("sluice aws stop") and init again with --fresh --restore <savepoint>, or with --fresh alone to start over without state',
      found,
    );
  }

  private async ensureTable(): Promise<void> {
    await ensureTable({
      tableName: this.options.tableName,
      partitionKey: { name: PK },
      sortKey: { name: SK },
      client: this.client,
    });
  }

  private key(sk: string): Record<string, AttributeValue> {
    return { [PK]: { S: this.pk }, [SK]: { S: sk } };
  }

  private async get<T>(sk: string): Promise<T | undefined> {
    const out = await this.call(`read ${sk}`, () =>
      this.client.send(new GetItemCommand({ TableName: this.options.tableName, Key: this.key(sk), ConsistentRead: true })),
    );
    return out.Item === undefined ? undefined : stripKeys<T>(out.Item);
  }

  /** Puts the item unless one with its key exists; returns whether it wrote. */
  private async putIfAbsent(sk: string, item: object): Promise<boolean> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.options.tableName,
          Item: { ...marshall(item, MARSHALL), ...this.key(sk) },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': PK },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw this.failure(`write ${sk}`, error);
    }
  }

  /** Items whose sort key starts with `prefix` (every item of the job when undefined), consistent, all pages. */
  private async query<T>(prefix: string | undefined, projection?: string): Promise<T[]> {
    const items: T[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const out = await this.call(`list ${prefix ?? ''}*`, () =>
        this.client.send(
          new QueryCommand({
            TableName: this.options.tableName,
            KeyConditionExpression: prefix === undefined ? '#pk = :pk' : '#pk = :pk AND begins_with(#sk, :prefix)',
            ExpressionAttributeNames: { '#pk': PK, ...(prefix === undefined && projection === undefined ? {} : { '#sk': SK }) },
            ExpressionAttributeValues: { ':pk': { S: this.pk }, ...(prefix === undefined ? {} : { ':prefix': { S: prefix } }) },
            ConsistentRead: true,
            ...(projection === undefined ? {} : { ProjectionExpression: projection }),
            ...(start === undefined ? {} : { ExclusiveStartKey: start }),
          }),
        ),
      );
      for (const item of out.Items ?? []) items.push(projection === undefined ? stripKeys<T>(item) : (unmarshall(item) as T));
      start = out.LastEvaluatedKey;
    } while (start !== undefined);
    return items;
  }

  /** `--fresh`: deletes every item of the job's partition, in batches of 25, retrying what DynamoDB left unprocessed. */
  private async clearPartition(): Promise<void> {
    const keys = await this.query<{ pk: string; sk: string }>(undefined, '#pk, #sk');
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      let pending: WriteRequest[] = keys.slice(i, i + DELETE_BATCH).map((k) => ({ DeleteRequest: { Key: this.key(k.sk) } }));
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > 0) await sleep(Math.min(50 * 2 ** attempt, 2000));
        if (attempt > 10) throw new ClusterControlError(`could not clear job "${this.options.jobId}": DynamoDB kept ${pending.length} deletes unprocessed`, { retriable: true });
        const batch = pending;
        const out = await this.call('clear the job partition', () =>
          this.client.send(new BatchWriteItemCommand({ RequestItems: { [this.options.tableName]: batch } })),
        );
        pending = out.UnprocessedItems?.[this.options.tableName] ?? [];
      }
    }
  }

  private async call<T>(what: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      throw this.failure(what, error);
    }
  }

  private failure(what: string, error: unknown): ClusterControlError {
    const name = awsErrorName(error);
    const hint = name === 'ResourceNotFoundException' ? `: table ${this.options.tableName} does not exist; "sluice aws init" creates it` : '';
    return new ClusterControlError(
      `cannot ${what} of job "${this.options.jobId}" in table ${this.options.tableName} (${name ?? String(error)})${hint}`,
      { cause: error, retriable: name !== 'ResourceNotFoundException' && name !== 'ValidationException' },
    );
  }
}

function stripKeys<T>(item: Record<string, AttributeValue>): T {
  const { [PK]: _pk, [SK]: _sk, ...rest } = item;
  return unmarshall(rest) as T;
}
