import { ConfigError } from '../core/index.ts';
import type { CompiledJobOptions } from '../contracts/job-options.ts';
import { keyGroupHashOf, type LogicalGraph, type LogicalNode, type OperatorNode, type PartitionerSpec, type SourceNode } from './logical-graph.ts';

/** A network edge between two vertices, with its partitioner resolved. */
export interface PhysicalEdge {
  readonly id: number;
  readonly fromVertex: number;
  /** The logical node (inside the upstream vertex's chain) whose output feeds this edge. */
  readonly fromNode: number;
  readonly sideTag: string | undefined;
  readonly toVertex: number;
  readonly inputIndex: number;
  readonly partitioner: PartitionerSpec;
}

/** A chain of operators run by one task per subtask; records pass between them by function call. */
export interface Vertex {
  readonly id: number;
  readonly name: string;
  readonly parallelism: number;
  /** Set when the chain starts with a source. */
  readonly source: SourceNode | undefined;
  readonly chain: OperatorNode[];
  readonly inputs: PhysicalEdge[];
  readonly outputs: PhysicalEdge[];
}

export interface PhysicalPlan {
  readonly vertices: Vertex[];
  readonly edges: PhysicalEdge[];
  readonly maxParallelism: number;
  /** Same graph => same fingerprint; worker threads rebuild the job and check they got the same plan. */
  readonly fingerprint: string;
}

function resolveParallelism(node: LogicalNode, options: CompiledJobOptions): number {
  const p = node.parallelism ?? options.parallelism;
  if (node.kind === 'operator' && node.keyed && p > options.maxParallelism) {
    throw new ConfigError(
      `operator "${node.name}" has parallelism ${p} above maxParallelism ${options.maxParallelism}: keyed operators cannot have more subtasks than key groups; raise --max-parallelism or lower the parallelism`,
    );
  }
  if (node.kind === 'source' && node.source.maxParallelism !== undefined && p > node.source.maxParallelism) {
    return node.source.maxParallelism;
  }
  return p;
}

/**
 * Turns the logical graph into vertices (operator chains) and network edges. An operator joins its upstream
 * operator's chain when it has a single input, reads the upstream's main output, that output has no other
 * consumer, the partitioning is forward, and the parallelism is the same.
 */
export function buildPhysicalPlan(graph: LogicalGraph, options: CompiledJobOptions): PhysicalPlan {
  const parallelism = graph.nodes.map((n) => resolveParallelism(n, options));
  const vertexOfNode = new Map<number, number>();
  const vertices: { id: number; source: SourceNode | undefined; chain: OperatorNode[]; parallelism: number }[] = [];
  const pendingEdges: { toVertex: number; from: number; sideTag: string | undefined; inputIndex: number; partitioner: PartitionerSpec }[] = [];

  for (const node of graph.nodes) {
    const p = parallelism[node.id] as number;
    if (node.kind === 'source') {
      vertexOfNode.set(node.id, vertices.length);
      vertices.push({ id: vertices.length, source: node, chain: [], parallelism: p });
      continue;
    }
    if (node.inputs.length === 0) throw new ConfigError(`operator "${node.name}" has no input`);
    if (node.keyed) keyGroupHashOf(node); // inputs keyed by different hashes are refused here, at build time
    const resolved = node.inputs.map((edge) => {
      const fromP = parallelism[edge.from] as number;
      const fromName = graph.node(edge.from).name;
      let partitioner = edge.partitioner ?? (fromP === p ? { kind: 'forward' as const } : { kind: 'rebalance' as const });
      if (partitioner.kind === 'forward' && fromP !== p) {
        throw new ConfigError(
          `forward partitioning from "${fromName}" (parallelism ${fromP}) to "${node.name}" (parallelism ${p}) needs equal parallelism: set the same parallelism or use rebalance()`,
        );
      }
      if (partitioner.kind === 'rebalance' && fromP === 1 && p === 1) partitioner = { kind: 'forward' };
      return { edge, partitioner };
    });
    const only = resolved.length === 1 ? resolved[0] : undefined;
    if (only !== undefined && only.partitioner.kind === 'forward' && only.edge.sideTag === undefined) {
      const upstream = vertices[vertexOfNode.get(only.edge.from) as number]!;
      const tailId = upstream.chain.length > 0 ? upstream.chain[upstream.chain.length - 1]!.id : upstream.source?.id;
      const mainConsumers = graph.consumersOf(only.edge.from).filter((c) => c.edge.sideTag === undefined);
      if (tailId === only.edge.from && mainConsumers.length === 1 && upstream.parallelism === p) {
        upstream.chain.push(node);
        vertexOfNode.set(node.id, upstream.id);
        continue;
      }
    }
    const id = vertices.length;
    vertexOfNode.set(node.id, id);
    vertices.push({ id, source: undefined, chain: [node], parallelism: p });
    for (const { edge, partitioner } of resolved) {
      pendingEdges.push({ toVertex: id, from: edge.from, sideTag: edge.sideTag, inputIndex: edge.inputIndex, partitioner });
    }
  }

  const edges: PhysicalEdge[] = pendingEdges.map((e, id) => ({
    id,
    fromVertex: vertexOfNode.get(e.from) as number,
    fromNode: e.from,
    sideTag: e.sideTag,
    toVertex: e.toVertex,
    inputIndex: e.inputIndex,
    partitioner: e.partitioner,
  }));

  const built: Vertex[] = vertices.map((v) => {
    const names = [...(v.source ? [v.source.name] : []), ...v.chain.map((n) => n.name)];
    return {
      id: v.id,
      name: names.join(' -> '),
      parallelism: v.parallelism,
      source: v.source,
      chain: v.chain,
      inputs: edges.filter((e) => e.toVertex === v.id),
      outputs: edges.filter((e) => e.fromVertex === v.id),
    };
  });

  const fingerprint = JSON.stringify({
    maxParallelism: options.maxParallelism,
    vertices: built.map((v) => [v.name, v.parallelism]),
    edges: edges.map((e) => [e.fromNode, e.sideTag ?? null, e.toVertex, e.inputIndex, partitionerFingerprint(e.partitioner)]),
  });
  return { vertices: built, edges, maxParallelism: options.maxParallelism, fingerprint };
}

/** An edge's partitioning in the fingerprint: its kind, and a hash edge's key-group hash unless it is murmur (so
 * existing plans keep their fingerprints). */
function partitionerFingerprint(p: PartitionerSpec): string {
  return p.kind === 'hash' && p.keyGroupHash !== undefined && p.keyGroupHash !== 'murmur' ? `hash:${p.keyGroupHash}` : p.kind;
}
