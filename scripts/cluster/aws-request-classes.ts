// What one HTTP request to an AWS service costs, as the counting proxy (scripts/cluster/counting-proxy.ts) sees it:
// the S3 request class, the Kinesis or DynamoDB action, and DynamoDB's read and write capacity units. Pure functions
// of the request and the answer, so that the unit tests pin the pricing rules down without emulators.

/** S3 bills PUT, COPY, POST and LIST requests as class A, GET, HEAD and the rest as class B; DELETE is free. */
export type S3RequestClass = 'A' | 'B' | 'free';

export interface S3Request {
  /** An S3 API operation name (PutObject, ListObjectsV2, ...). */
  readonly operation: string;
  readonly requestClass: S3RequestClass;
}

/**
 * The operation and class of a path-style S3 request (`/bucket/key?query`): what the SDK sends to an emulator
 * endpoint (createS3Client forces path style for a configured endpoint).
 */
export function classifyS3Request(method: string, url: string, headers: Readonly<Record<string, string | string[] | undefined>>): S3Request {
  const parsed = new URL(url, 'http://s3.local');
  const parts = parsed.pathname.split('/').filter((p) => p !== '');
  const query = parsed.searchParams;
  const m = method.toUpperCase();
  if (parts.length === 0) return { operation: m === 'GET' ? 'ListBuckets' : `${m}Service`, requestClass: m === 'GET' ? 'A' : 'B' };
  const bucketLevel = parts.length === 1;
  if (m === 'DELETE') return { operation: bucketLevel ? 'DeleteBucket' : query.has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject', requestClass: 'free' };
  if (m === 'PUT') {
    if (bucketLevel) return { operation: 'PutBucket', requestClass: 'A' };
    if (headers['x-amz-copy-source'] !== undefined) return { operation: query.has('partNumber') ? 'UploadPartCopy' : 'CopyObject', requestClass: 'A' };
    return { operation: query.has('partNumber') ? 'UploadPart' : 'PutObject', requestClass: 'A' };
  }
  if (m === 'POST') {
    // DeleteObjects is a POST, but S3 prices deletes as free whatever the verb.
    if (query.has('delete')) return { operation: 'DeleteObjects', requestClass: 'free' };
    if (query.has('uploads')) return { operation: 'CreateMultipartUpload', requestClass: 'A' };
    if (query.has('uploadId')) return { operation: 'CompleteMultipartUpload', requestClass: 'A' };
    return { operation: 'PostObject', requestClass: 'A' };
  }
  if (m === 'GET' && bucketLevel) {
    if (query.has('uploads')) return { operation: 'ListMultipartUploads', requestClass: 'A' };
    if (query.has('versions')) return { operation: 'ListObjectVersions', requestClass: 'A' };
    // A bucket GET with another sub-resource (?location, ?versioning, ...) reads configuration: class B.
    const subresource = [...query.keys()].find((k) => !LIST_PARAMETERS.has(k));
    if (subresource !== undefined) return { operation: `GetBucket:${subresource}`, requestClass: 'B' };
    return { operation: query.get('list-type') === '2' ? 'ListObjectsV2' : 'ListObjects', requestClass: 'A' };
  }
  if (m === 'GET' && query.has('uploadId')) return { operation: 'ListParts', requestClass: 'A' };
  if (m === 'GET') return { operation: 'GetObject', requestClass: 'B' };
  if (m === 'HEAD') return { operation: bucketLevel ? 'HeadBucket' : 'HeadObject', requestClass: 'B' };
  return { operation: m, requestClass: 'B' };
}

const LIST_PARAMETERS = new Set(['list-type', 'prefix', 'delimiter', 'max-keys', 'marker', 'continuation-token', 'start-after', 'fetch-owner', 'encoding-type', 'x-id']);

/** The action of a JSON-protocol call (Kinesis, DynamoDB): the part after the dot of `x-amz-target`. */
export function jsonTargetAction(headers: Readonly<Record<string, string | string[] | undefined>>): string | undefined {
  const target = headers['x-amz-target'];
  if (typeof target !== 'string' || target === '') return undefined;
  return target.split('.').pop();
}

/** DynamoDB actions that read items (billed in read units) and that write items (billed in write units). */
const READ_ACTIONS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const WRITE_ACTIONS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

/** Whether a DynamoDB action consumes capacity (and accepts ReturnConsumedCapacity); control-plane calls do not. */
export function isDynamoDbDataAction(action: string): boolean {
  return READ_ACTIONS.has(action) || WRITE_ACTIONS.has(action);
}

/** Capacity units of one call on one table. */
export interface TableUnits {
  readonly table: string;
  readonly readUnits: number;
  readonly writeUnits: number;
}

export interface DynamoDbCallUnits {
  readonly units: readonly TableUnits[];
  /**
   * `measured`: from the answer's ConsumedCapacity (DynamoDB Local computes it by the on-demand rules: writes 1 per
   * KB, strongly consistent reads 1 per 4 KB, eventually consistent half that). `computed`: a transaction, whose
   * ConsumedCapacity DynamoDB Local gets wrong (one item's worth per table, however many items), so its units come
   * from the request: 2 per item and started KB, the larger of that and what was returned. `estimated`: the call
   * failed (a condition or a cancelled transaction), which returns no ConsumedCapacity; DynamoDB still bills it,
   * counted here as its minimum, 1 unit per item (2 in a transaction).
   */
  readonly source: 'measured' | 'computed' | 'estimated' | 'none';
}

interface ConsumedCapacity {
  readonly TableName?: string;
  readonly CapacityUnits?: number;
  readonly ReadCapacityUnits?: number;
  readonly WriteCapacityUnits?: number;
}

/**
 * The read and write units of one DynamoDB call from its request body and its answer. A control-plane call
 * (CreateTable, DescribeTable, ...) has none.
 */
export function dynamoDbCallUnits(action: string, request: unknown, status: number, response: unknown): DynamoDbCallUnits {
  if (!isDynamoDbDataAction(action)) return { units: [], source: 'none' };
  const write = WRITE_ACTIONS.has(action);
  if (status >= 200 && status < 300) {
    const consumed = (response as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] } | undefined)?.ConsumedCapacity;
    if (consumed !== undefined) {
      const list = Array.isArray(consumed) ? consumed : [consumed];
      const measured = list.map((c) => ({
        table: c.TableName ?? '?',
        readUnits: c.ReadCapacityUnits ?? (write ? 0 : (c.CapacityUnits ?? 0)),
        writeUnits: c.WriteCapacityUnits ?? (write ? (c.CapacityUnits ?? 0) : 0),
      }));
      if (action !== 'TransactWriteItems' && action !== 'TransactGetItems') return { units: measured, source: 'measured' };
      return { units: larger(measured, transactionUnits(action, request)), source: 'computed' };
    }
  }
  return { units: estimateFailedCall(action, request), source: 'estimated' };
}

/** Per table, the larger of two unit counts. */
function larger(a: readonly TableUnits[], b: readonly TableUnits[]): TableUnits[] {
  const out = new Map<string, TableUnits>();
  for (const u of [...a, ...b]) {
    const before = out.get(u.table);
    out.set(u.table, { table: u.table, readUnits: Math.max(before?.readUnits ?? 0, u.readUnits), writeUnits: Math.max(before?.writeUnits ?? 0, u.writeUnits) });
  }
  return [...out.values()];
}

type WireValue = Record<string, unknown>;
type WireItem = Record<string, WireValue>;

/**
 * Size of an attribute value in DynamoDB's JSON wire format, by DynamoDB's item size rules (names and values in
 * bytes, numbers about a byte per two digits, lists and maps 3 bytes plus one per element).
 */
export function wireValueSize(value: WireValue): number {
  if (typeof value['S'] === 'string') return Buffer.byteLength(value['S'], 'utf8');
  if (typeof value['N'] === 'string') return Math.ceil(value['N'].replace(/^-/, '').length / 2) + 1;
  if (typeof value['B'] === 'string') return Buffer.from(value['B'], 'base64').length;
  if (value['BOOL'] !== undefined || value['NULL'] !== undefined) return 1;
  if (Array.isArray(value['SS'])) return (value['SS'] as string[]).reduce((n, s) => n + Buffer.byteLength(s, 'utf8'), 0);
  if (Array.isArray(value['NS'])) return (value['NS'] as string[]).reduce((n, s) => n + Math.ceil(s.length / 2) + 1, 0);
  if (Array.isArray(value['BS'])) return (value['BS'] as string[]).reduce((n, b) => n + Buffer.from(b, 'base64').length, 0);
  if (Array.isArray(value['L'])) return 3 + (value['L'] as WireValue[]).reduce((n, v) => n + 1 + wireValueSize(v), 0);
  if (typeof value['M'] === 'object' && value['M'] !== null) return 3 + wireItemSize(value['M'] as WireItem);
  return 0;
}

export function wireItemSize(item: WireItem): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += Buffer.byteLength(name, 'utf8') + wireValueSize(value);
  return size;
}

/**
 * A transaction's units from its request: 2 per item and started KB (write) or 4 KB (read). A Put's size is its item;
 * an Update's its key and values, a Delete's and a ConditionCheck's its key: lower bounds, the stored item may be
 * larger (the items this job transacts are well under 1 KB, so each costs 2).
 */
export function transactionUnits(action: string, request: unknown): TableUnits[] {
  const items = ((request ?? {}) as { TransactItems?: Array<Record<string, Record<string, unknown>>> }).TransactItems ?? [];
  const units: TableUnits[] = [];
  for (const item of items) {
    for (const [kind, op] of Object.entries(item)) {
      const table = typeof op['TableName'] === 'string' ? op['TableName'] : '?';
      if (action === 'TransactGetItems') {
        units.push({ table, readUnits: 2 * Math.max(1, Math.ceil(wireItemSize((op['Key'] ?? {}) as WireItem) / 4096)), writeUnits: 0 });
        continue;
      }
      const size =
        kind === 'Put'
          ? wireItemSize((op['Item'] ?? {}) as WireItem)
          : wireItemSize((op['Key'] ?? {}) as WireItem) + (kind === 'Update' ? wireItemSize((op['ExpressionAttributeValues'] ?? {}) as WireItem) : 0);
      units.push({ table, readUnits: 0, writeUnits: 2 * Math.max(1, Math.ceil(size / 1024)) });
    }
  }
  const byTable = new Map<string, TableUnits>();
  for (const u of units) {
    const before = byTable.get(u.table);
    byTable.set(u.table, { table: u.table, readUnits: (before?.readUnits ?? 0) + u.readUnits, writeUnits: (before?.writeUnits ?? 0) + u.writeUnits });
  }
  return [...byTable.values()];
}

/** The minimum a call is billed: one unit per item it names (transactions double), by table. */
function estimateFailedCall(action: string, request: unknown): TableUnits[] {
  const body = (request ?? {}) as Record<string, unknown>;
  const byTable = new Map<string, { readUnits: number; writeUnits: number }>();
  const add = (table: unknown, readUnits: number, writeUnits: number): void => {
    const name = typeof table === 'string' ? table : '?';
    const before = byTable.get(name) ?? { readUnits: 0, writeUnits: 0 };
    byTable.set(name, { readUnits: before.readUnits + readUnits, writeUnits: before.writeUnits + writeUnits });
  };
  if (action === 'TransactWriteItems') {
    for (const item of (body['TransactItems'] as Array<Record<string, { TableName?: string }>> | undefined) ?? []) {
      for (const op of Object.values(item)) add(op.TableName, 0, 2);
    }
  } else if (action === 'TransactGetItems') {
    for (const item of (body['TransactItems'] as Array<{ Get?: { TableName?: string } }> | undefined) ?? []) add(item.Get?.TableName, 2, 0);
  } else if (action === 'BatchWriteItem') {
    for (const [table, requests] of Object.entries((body['RequestItems'] as Record<string, unknown[]> | undefined) ?? {})) add(table, 0, requests.length);
  } else if (action === 'BatchGetItem') {
    for (const [table, request] of Object.entries((body['RequestItems'] as Record<string, { Keys?: unknown[] }> | undefined) ?? {})) add(table, request.Keys?.length ?? 0, 0);
  } else if (WRITE_ACTIONS.has(action)) {
    add(body['TableName'], 0, 1);
  } else {
    add(body['TableName'], 1, 0);
  }
  return [...byTable].map(([table, u]) => ({ table, ...u }));
}

/**
 * The request body with `ReturnConsumedCapacity: TOTAL` when the caller did not ask for more, so that the answer
 * carries the units; undefined when the body needs no change (or is not a data call).
 */
export function withConsumedCapacity(action: string, request: unknown): Record<string, unknown> | undefined {
  if (!isDynamoDbDataAction(action) || typeof request !== 'object' || request === null) return undefined;
  const body = request as Record<string, unknown>;
  const asked = body['ReturnConsumedCapacity'];
  if (asked === 'TOTAL' || asked === 'INDEXES') return undefined;
  return { ...body, ReturnConsumedCapacity: 'TOTAL' };
}
