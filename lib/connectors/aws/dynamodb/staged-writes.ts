import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { convertToAttr, marshall } from '@aws-sdk/util-dynamodb';
import { NonFiniteNumberError } from '../../../core/index.ts';
import { findNonFinite } from '../../finite-json.ts';
import { addDecimalStrings, canonicalDecimal } from './decimal.ts';
import { DynamoDbSinkError } from './errors.ts';
import type { DynamoDbAttributes, DynamoDbKeySchema, DynamoDbWrite } from './write-ops.ts';

export type AttributeMap = Record<string, AttributeValue>;

/** What an update does to one attribute. */
export type AttributeAction = { readonly op: 'set'; readonly value: AttributeValue } | { readonly op: 'add'; readonly value: AttributeValue } | { readonly op: 'remove' };

/** One write, marshalled, after folding. */
export type StagedWrite =
  | { readonly kind: 'put'; readonly item: AttributeMap }
  | { readonly kind: 'delete' }
  | { readonly kind: 'update'; readonly actions: Map<string, AttributeAction> };

/** The writes to one item in order; each could not be folded into the one before it. */
export interface StagedItem {
  readonly key: AttributeMap;
  readonly writes: StagedWrite[];
}

const MARSHALL_OPTIONS = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

function invalid(message: string, cause?: unknown): DynamoDbSinkError {
  return new DynamoDbSinkError(`invalid DynamoDB write: ${message}`, { cause, retriable: false });
}

/** `a` ADD `b` as DynamoDB computes it, or undefined when it cannot be computed here (then both are sent). */
function addAttributeValues(a: AttributeValue, b: AttributeValue): AttributeValue | undefined {
  if (a.N !== undefined && b.N !== undefined) {
    const sum = addDecimalStrings(a.N, b.N);
    return sum === undefined ? undefined : { N: sum };
  }
  if (a.SS !== undefined && b.SS !== undefined) return { SS: [...new Set([...a.SS, ...b.SS])] };
  if (a.NS !== undefined && b.NS !== undefined) {
    return { NS: [...new Set([...a.NS, ...b.NS].map(canonicalDecimal))] };
  }
  if (a.BS !== undefined && b.BS !== undefined) {
    const seen = new Map<string, Uint8Array>();
    for (const v of [...a.BS, ...b.BS]) seen.set(Buffer.from(v).toString('base64'), v);
    return { BS: [...seen.values()] };
  }
  return undefined;
}

/**
 * The writes of one checkpoint, folded per item: a put, delete or update followed by another write to the same key
 * becomes one write with the same effect (a put and a later update become a put of the updated item; two ADDs of
 * numbers become one exact ADD of their sum). Where the effect cannot be computed without reading the item (ADD to
 * an attribute that the checkpoint SET to a string, sums beyond 38 digits), the writes stay separate, in order.
 */
export class StagedWrites {
  private items = new Map<string, StagedItem>();
  private count = 0;

  constructor(
    private readonly schema: DynamoDbKeySchema,
    private readonly allowAdd: boolean,
    /** The sink operator, named when a write holds a number DynamoDB cannot store. */
    private readonly operator = 'DynamoDB sink',
  ) {}

  /** Writes after folding (what a commit would send). */
  get size(): number {
    return this.count;
  }

  add(write: DynamoDbWrite): void {
    let key: AttributeMap;
    let staged: StagedWrite;
    switch (write.type) {
      case 'put': {
        const item = this.marshallMap(write.item, 'put item');
        key = this.keyOf(item, 'put item');
        staged = { kind: 'put', item };
        break;
      }
      case 'delete':
        key = this.keyOf(this.marshallMap(write.key, 'delete key'), 'delete key', true);
        staged = { kind: 'delete' };
        break;
      case 'update':
        key = this.keyOf(this.marshallMap(write.key, 'update key'), 'update key', true);
        staged = { kind: 'update', actions: this.actionsOf(write) };
        break;
      default:
        throw invalid(`unknown write type "${String((write as { type?: unknown }).type)}" (expected put, update or delete)`);
    }
    const id = keyString(key);
    const existing = this.items.get(id);
    if (existing === undefined) {
      this.items.set(id, { key, writes: [staged] });
      this.count++;
      return;
    }
    const last = existing.writes.length - 1;
    const folded = fold(existing.writes[last] as StagedWrite, staged, key);
    if (folded !== undefined) existing.writes[last] = folded;
    else {
      existing.writes.push(staged);
      this.count++;
    }
  }

  /** Everything staged, in first-write order per item; the stage is empty afterwards. */
  drain(): StagedItem[] {
    const items = [...this.items.values()];
    this.items = new Map();
    this.count = 0;
    return items;
  }

  private marshallMap(value: DynamoDbAttributes | undefined, what: string): AttributeMap {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(`the ${what} must be an object of attributes`);
    try {
      return marshall(value, MARSHALL_OPTIONS) as AttributeMap;
    } catch (cause) {
      this.refuseNonFinite(value, what);
      throw invalid(`the ${what} cannot be converted to DynamoDB attributes: ${(cause as Error).message}`, cause);
    }
  }

  /** The key attributes of `attributes`, which must have them (and, with `exact`, nothing else). */
  private keyOf(attributes: AttributeMap, what: string, exact = false): AttributeMap {
    const names = [this.schema.partitionKey, ...(this.schema.sortKey === undefined ? [] : [this.schema.sortKey])];
    const key: AttributeMap = {};
    for (const name of names) {
      const value = attributes[name];
      if (value === undefined || (value.S === undefined && value.N === undefined && value.B === undefined)) {
        throw invalid(`the ${what} needs key attribute "${name}" as a string, number or binary value`);
      }
      key[name] = value;
    }
    if (exact) {
      const extra = Object.keys(attributes).filter((n) => !names.includes(n));
      if (extra.length > 0) throw invalid(`the ${what} has attributes that are not key attributes: ${extra.join(', ')}`);
    }
    return key;
  }

  private actionsOf(write: Extract<DynamoDbWrite, { type: 'update' }>): Map<string, AttributeAction> {
    const actions = new Map<string, AttributeAction>();
    const keyNames = new Set([this.schema.partitionKey, this.schema.sortKey]);
    const claim = (name: string): void => {
      if (keyNames.has(name)) throw invalid(`an update cannot change key attribute "${name}"`);
      if (actions.has(name)) throw invalid(`an update names attribute "${name}" twice (in set, add or remove)`);
    };
    for (const [name, value] of Object.entries(write.set ?? {})) {
      if (value === undefined) continue;
      claim(name);
      actions.set(name, { op: 'set', value: this.convert(value, `set.${name}`) });
    }
    for (const [name, value] of Object.entries(write.add ?? {})) {
      if (value === undefined) continue;
      if (!this.allowAdd) throw invalid(`add.${name}: ADD is not idempotent and not allowed in 'upsert' mode (use 'transactional')`);
      claim(name);
      const converted = this.convert(value, `add.${name}`);
      if (converted.N === undefined && converted.SS === undefined && converted.NS === undefined && converted.BS === undefined) {
        throw invalid(`add.${name} must be a number or a set`);
      }
      actions.set(name, { op: 'add', value: converted });
    }
    for (const name of write.remove ?? []) {
      if (typeof name !== 'string' || name === '') throw invalid('remove must list attribute names');
      claim(name);
      actions.set(name, { op: 'remove' });
    }
    return actions;
  }

  /** NaN and ±Infinity fail the job naming the field (the marshaller's own message names neither field nor sink). */
  private refuseNonFinite(value: unknown, what: string): void {
    const bad = findNonFinite(value, what.replace(' ', '.'), 0);
    if (bad !== undefined) {
      throw new NonFiniteNumberError(this.operator, bad.path, bad.value, 'DynamoDB numbers must be finite: check the computation that produced it');
    }
  }

  private convert(value: unknown, what: string): AttributeValue {
    try {
      return convertToAttr(value, MARSHALL_OPTIONS);
    } catch (cause) {
      this.refuseNonFinite(value, what);
      throw invalid(`${what} cannot be converted to a DynamoDB attribute: ${(cause as Error).message}`, cause);
    }
  }
}

/** Identifies an item by its key attributes' values. */
function keyString(key: AttributeMap): string {
  let out = '';
  for (const name of Object.keys(key).sort()) {
    const v = key[name] as AttributeValue;
    const part = v.S !== undefined ? `S${v.S}` : v.N !== undefined ? `N${canonicalDecimal(v.N)}` : `B${Buffer.from(v.B as Uint8Array).toString('base64')}`;
    out += `${name}\u0000${part}\u0000`;
  }
  return out;
}

/** `next` applied after `last` as one write, or undefined when that needs the item's current value. */
function fold(last: StagedWrite, next: StagedWrite, key: AttributeMap): StagedWrite | undefined {
  if (next.kind !== 'update') return next;
  if (last.kind === 'delete') {
    // Updating a missing item creates it: SET and ADD values as given, REMOVE of nothing.
    const item: AttributeMap = { ...key };
    for (const [name, action] of next.actions) if (action.op !== 'remove') item[name] = action.value;
    return { kind: 'put', item };
  }
  if (last.kind === 'put') {
    const sums = new Map<string, AttributeValue>();
    for (const [name, action] of next.actions) {
      if (action.op !== 'add') continue;
      const current = last.item[name];
      const sum = current === undefined ? action.value : addAttributeValues(current, action.value);
      if (sum === undefined) return undefined;
      sums.set(name, sum);
    }
    for (const [name, action] of next.actions) {
      if (action.op === 'set') last.item[name] = action.value;
      else if (action.op === 'remove') delete last.item[name];
      else last.item[name] = sums.get(name) as AttributeValue;
    }
    return last;
  }
  const merged = new Map<string, AttributeAction>();
  for (const [name, action] of next.actions) {
    const before = last.actions.get(name);
    if (action.op !== 'add' || before === undefined) {
      merged.set(name, action);
      continue;
    }
    if (before.op === 'remove') {
      merged.set(name, { op: 'set', value: action.value });
      continue;
    }
    const sum = addAttributeValues(before.value, action.value);
    if (sum === undefined) return undefined;
    merged.set(name, { op: before.op, value: sum });
  }
  for (const [name, action] of merged) last.actions.set(name, action);
  return last;
}
