import { ConfigError, type Key, type KeyGroupHash } from '../core/index.ts';
import type { Operator } from '../operators/operator.ts';
import type { Source } from '../connectors/source.ts';
import type { Sink } from '../connectors/sink.ts';
import type { WatermarkStrategy } from '../contracts/watermark-strategy.ts';
import type { StateMeaning } from '../checkpoint/types.ts';

/** How records of an edge are distributed over the downstream subtasks. */
export type PartitionerSpec =
  /** Subtask i to subtask i; needs equal parallelism. Allows chaining. */
  | { readonly kind: 'forward' }
  /** Whole batches round-robin over all downstream subtasks. */
  | { readonly kind: 'rebalance' }
  /** Every batch to every downstream subtask. */
  | { readonly kind: 'broadcast' }
  /** Each record to the subtask owning its key group. */
  | {
      readonly kind: 'hash';
      readonly keySelector: (value: unknown) => Key;
      /**
       * How a key maps to its key group: `murmur` (the engine's hash) or `kinesis-hash` (MD5 of the key as a Kinesis
       * partition key, so key groups line up with shard hash-key ranges; see docs/cluster.md). Part of the plan
       * fingerprint. @default 'murmur'
       */
      readonly keyGroupHash?: 'murmur' | 'kinesis-hash';
    };

export interface LogicalEdge {
  readonly from: number;
  /** Side output of `from` consumed by this edge, or undefined for its main output. */
  readonly sideTag: string | undefined;
  /** Undefined: forward when parallelism matches, else rebalance. */
  readonly partitioner: PartitionerSpec | undefined;
  /** 0, or 1 for the second input of a two-input operator. */
  readonly inputIndex: number;
}

/**
 * The key-group hash a keyed node's state uses: the one of its hash input edges (murmur without any). Inputs that
 * disagree are a ConfigError naming the node: one operator's state has one key-group function.
 */
export function keyGroupHashOf(node: { readonly name: string; readonly inputs: readonly LogicalEdge[] }): KeyGroupHash {
  let found: KeyGroupHash | undefined;
  for (const edge of node.inputs) {
    const p = edge.partitioner;
    if (p?.kind !== 'hash') continue;
    const hash = p.keyGroupHash ?? 'murmur';
    if (found !== undefined && found !== hash) {
      throw new ConfigError(
        `operator "${node.name}" has keyed inputs with different key-group hashes (${found} and ${hash}): key both inputs with the same keyBy option keyGroups`,
      );
    }
    found = hash;
  }
  return found ?? 'murmur';
}

interface NodeBase {
  readonly id: number;
  name: string;
  /** Undefined: the job's default parallelism. */
  parallelism: number | undefined;
  readonly inputs: LogicalEdge[];
  /**
   * What the operator's state means (window assigner and sizes, function kind, accumulator shape), recorded in
   * checkpoints so that a restore into an operator that reads the state differently is refused.
   */
  readonly stateMeaning: StateMeaning;
  /** The user's version of the operator's state schema (`.stateVersion(n)`); a restore needs the same. */
  stateVersion: number | undefined;
}

export interface SourceNode extends NodeBase {
  readonly kind: 'source';
  readonly source: Source<unknown>;
  /** Per-split timestamps and watermarks, when the source was given a strategy. */
  readonly watermarks: WatermarkStrategy<unknown> | undefined;
}

export interface OperatorNode extends NodeBase {
  readonly kind: 'operator';
  /** Called once per subtask: operators hold per-subtask state. */
  readonly createOperator: () => Operator<unknown, unknown>;
  /** Needs a keyed state backend and timers (after keyBy). */
  readonly keyed: boolean;
  readonly isSink: boolean;
  /** The sink a sink node writes to (set by `sinkTo`), so plans can check it without creating the operator. */
  readonly sink?: Sink<unknown>;
}

export type LogicalNode = SourceNode | OperatorNode;

/** The job as the API built it: nodes in creation order (which is a topological order). */
export class LogicalGraph {
  readonly nodes: LogicalNode[] = [];

  addSource(name: string, source: Source<unknown>, watermarks: WatermarkStrategy<unknown> | undefined): SourceNode {
    const node: SourceNode = {
      kind: 'source',
      id: this.nodes.length,
      name,
      parallelism: undefined,
      inputs: [],
      source,
      watermarks,
      stateMeaning: { operator: 'source' },
      stateVersion: undefined,
    };
    this.nodes.push(node);
    return node;
  }

  addOperator(
    name: string,
    createOperator: () => Operator<unknown, unknown>,
    inputs: LogicalEdge[],
    options: { keyed?: boolean; isSink?: boolean; sink?: Sink<unknown>; parallelism?: number; stateMeaning?: StateMeaning } = {},
  ): OperatorNode {
    const node: OperatorNode = {
      kind: 'operator',
      id: this.nodes.length,
      name,
      parallelism: options.parallelism,
      inputs,
      createOperator,
      keyed: options.keyed ?? false,
      isSink: options.isSink ?? false,
      ...(options.sink === undefined ? {} : { sink: options.sink }),
      stateMeaning: options.stateMeaning ?? {},
      stateVersion: undefined,
    };
    this.nodes.push(node);
    return node;
  }

  node(id: number): LogicalNode {
    const node = this.nodes[id];
    if (node === undefined) throw new ConfigError(`no stream node with id ${id}`);
    return node;
  }

  /** Edges leaving `id`, in the order the consumers were created. */
  consumersOf(id: number): { node: LogicalNode; edge: LogicalEdge }[] {
    const result: { node: LogicalNode; edge: LogicalEdge }[] = [];
    for (const node of this.nodes) for (const edge of node.inputs) if (edge.from === id) result.push({ node, edge });
    return result;
  }
}
