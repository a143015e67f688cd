import { createHash } from 'node:crypto';
import { ConfigError, keyGroupRangeForSubtask } from '../core/index.ts';
import type { TaskId } from '../checkpoint/types.ts';
import type { ClusterConfigItem, ClusterEdgeConfig, ClusterSinkConfig, EdgeMode } from '../cluster/control-items.ts';
import { isTwoPhaseCommitSink } from '../connectors/sink.ts';
import type { PhysicalEdge, PhysicalPlan, Vertex } from './physical-plan.ts';

/** How a job is laid out on a cluster (`sluice aws init`). */
export interface SlotPlanOptions {
  /** P: the number of slots. Every vertex of the plan must run at this parallelism. */
  readonly parallelism: number;
  /**
   * The internal Kinesis stream (P shards) that carries every keyBy, rebalance and broadcast edge that is not
   * aligned. @default undefined: a plan that needs one is refused
   */
  readonly exchangeStream?: string;
}

/** Slot `slot` runs subtask `slot` of every vertex and owns key groups `keyGroups[0]..keyGroups[1]` (inclusive). */
export interface ClusterSlot {
  readonly slot: number;
  readonly keyGroups: readonly [number, number];
}

/** What the control table's `config` item is made of, derived from the physical plan alone. */
export interface SlotPlan {
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly slots: readonly ClusterSlot[];
  readonly edges: readonly ClusterEdgeConfig[];
  /** Hex SHA-256 of the plan's fingerprint, P, maxParallelism and every edge's mode and key-group hash. */
  readonly fingerprint: string;
  readonly tasks: readonly TaskId[];
  readonly sourceTasks: readonly TaskId[];
  readonly sinks: readonly ClusterSinkConfig[];
}

function edgeLabel(plan: PhysicalPlan, edge: PhysicalEdge): string {
  const from = plan.vertices[edge.fromVertex]?.name ?? `vertex ${edge.fromVertex}`;
  const to = plan.vertices[edge.toVertex]?.name ?? `vertex ${edge.toVertex}`;
  return `edge ${edge.id} ("${from}" -> "${to}", ${edge.partitioner.kind})`;
}

function checkParallelism(parallelism: number, maxParallelism: number): void {
  if (!Number.isSafeInteger(parallelism) || parallelism < 1) {
    throw new ConfigError(`the cluster's parallelism (slots) must be a positive integer, got ${String(parallelism)}`);
  }
  if (parallelism > maxParallelism) {
    throw new ConfigError(
      `the cluster's parallelism ${parallelism} is above maxParallelism ${maxParallelism}: a slot needs at least one key group; raise --max-parallelism or lower --parallelism`,
    );
  }
}

/** A cluster runs unbounded jobs with every vertex once per slot. */
function checkVertex(vertex: Vertex, parallelism: number): void {
  if (vertex.source?.source.bounded === true) {
    throw new ConfigError(
      `source "${vertex.source.name}" is bounded: a cluster runs only unbounded sources (its slots never finish); run the job with "sluice run" or use an unbounded source`,
    );
  }
  if (vertex.parallelism !== parallelism) {
    const cap = vertex.source?.source.maxParallelism;
    const why =
      cap !== undefined && cap < parallelism
        ? `its source allows at most ${cap} subtasks; use a source that can be split ${parallelism} ways or deploy with --parallelism ${cap}`
        : `remove its setParallelism(${vertex.parallelism}) or deploy with --parallelism ${vertex.parallelism}`;
    throw new ConfigError(
      `vertex "${vertex.name}" runs at parallelism ${vertex.parallelism}, not the cluster's ${parallelism}: every vertex runs once in each slot; ${why}`,
    );
  }
}

/**
 * Why a `kinesis-hash` keyBy edge cannot read its key groups straight from the source, or undefined when it can:
 * the upstream vertex must start with a source that reads key-group ranges and have only stateless operators
 * (no keyed state, no sink) up to the edge, so every record a slot sees is already one of its own key groups.
 */
function alignmentProblem(plan: PhysicalPlan, edge: PhysicalEdge): string | undefined {
  const upstream = plan.vertices[edge.fromVertex];
  if (upstream === undefined) return `its upstream vertex ${edge.fromVertex} is missing from the plan`;
  if (upstream.source === undefined) {
    return `its upstream "${upstream.name}" does not start with a source; a keyBy with keyGroups 'kinesis-hash' must follow a Kinesis source with only stateless operators (map, filter, flatMap) in between`;
  }
  if (upstream.source.source.supportsKeyGroupAlignment !== true) {
    return `its source "${upstream.source.name}" cannot read a range of kinesis-hash key groups (only the Kinesis source can); drop keyGroups: 'kinesis-hash' to shuffle through the exchange stream`;
  }
  for (const node of upstream.chain) {
    if (node.keyed || node.isSink) {
      return `operator "${node.name}" between the source and the keyBy keeps state; move the keyBy right behind the source or drop keyGroups: 'kinesis-hash'`;
    }
    if (node.id === edge.fromNode) break;
  }
  return undefined;
}

function edgeMode(plan: PhysicalPlan, edge: PhysicalEdge, exchangeStream: string | undefined): EdgeMode {
  const partitioner = edge.partitioner;
  if (partitioner.kind === 'forward') return 'local';
  if (partitioner.kind === 'hash' && partitioner.keyGroupHash === 'kinesis-hash') {
    const problem = alignmentProblem(plan, edge);
    if (problem !== undefined) throw new ConfigError(`${edgeLabel(plan, edge)} uses keyGroups 'kinesis-hash' but cannot be aligned: ${problem}`);
    return 'aligned';
  }
  if (exchangeStream === undefined || exchangeStream === '') {
    throw new ConfigError(
      `${edgeLabel(plan, edge)} crosses slots through the exchange stream: pass --exchange-stream NAME (a Kinesis stream of P shards), or key it with keyGroups: 'kinesis-hash' right behind a Kinesis source`,
    );
  }
  return 'exchange';
}

function clusterEdge(plan: PhysicalPlan, edge: PhysicalEdge, exchangeStream: string | undefined): ClusterEdgeConfig {
  const mode = edgeMode(plan, edge, exchangeStream);
  const base = { id: String(edge.id), fromVertex: edge.fromVertex, toVertex: edge.toVertex, mode };
  return edge.partitioner.kind === 'hash' ? { ...base, keyGroupHash: edge.partitioner.keyGroupHash ?? 'murmur' } : base;
}

/** Two-phase-commit sinks, which the coordinator commits from their JSON descriptor: they need one. */
function clusterSinks(plan: PhysicalPlan): ClusterSinkConfig[] {
  const sinks: ClusterSinkConfig[] = [];
  for (const vertex of plan.vertices) {
    for (const node of vertex.chain) {
      if (node.sink === undefined || !isTwoPhaseCommitSink(node.sink)) continue;
      const externalCommit = node.sink.externalCommit;
      if (externalCommit === undefined) {
        throw new ConfigError(
          `sink "${node.name}" commits in two phases but has no externalCommit descriptor: in a cluster only the coordinator commits, without the job's code; use a sink that declares one (the DynamoDB sink does) or run the job with "sluice run"`,
        );
      }
      sinks.push({ nodeId: node.id, name: node.name, externalCommit });
    }
  }
  return sinks;
}

/** The slot plan's fingerprint: a worker recomputes it from its own plan and the stored edges to check its job. */
export function clusterFingerprint(plan: PhysicalPlan, parallelism: number, edges: readonly ClusterEdgeConfig[]): string {
  const canonical = JSON.stringify({
    plan: plan.fingerprint,
    parallelism,
    maxParallelism: plan.maxParallelism,
    edges: edges.map((e) => [e.id, e.fromVertex, e.toVertex, e.mode, e.keyGroupHash ?? null]),
  });
  return createHash('sha256').update(canonical).digest('hex');
}

/**
 * Lays a physical plan out on P slots: slot s runs subtask s of every vertex. Refuses (ConfigError naming the
 * culprit and the fix) a vertex at another parallelism, a bounded source, a `kinesis-hash` keyBy that cannot be
 * aligned, an edge that needs the exchange stream when there is none, and a two-phase-commit sink without
 * `externalCommit`. Pure: same plan and options, same result.
 */
export function planSlots(plan: PhysicalPlan, options: SlotPlanOptions): SlotPlan {
  const parallelism = options.parallelism;
  checkParallelism(parallelism, plan.maxParallelism);
  for (const vertex of plan.vertices) checkVertex(vertex, parallelism);
  const edges = plan.edges.map((edge) => clusterEdge(plan, edge, options.exchangeStream));
  const sinks = clusterSinks(plan);
  const slots: ClusterSlot[] = [];
  for (let slot = 0; slot < parallelism; slot++) {
    const range = keyGroupRangeForSubtask(slot, parallelism, plan.maxParallelism);
    slots.push({ slot, keyGroups: [range.start, range.end] });
  }
  const tasks: TaskId[] = [];
  const sourceTasks: TaskId[] = [];
  for (const vertex of plan.vertices) {
    for (let subtask = 0; subtask < parallelism; subtask++) {
      tasks.push({ vertex: vertex.id, subtask });
      if (vertex.source !== undefined) sourceTasks.push({ vertex: vertex.id, subtask });
    }
  }
  return {
    parallelism,
    maxParallelism: plan.maxParallelism,
    slots,
    edges,
    fingerprint: clusterFingerprint(plan, parallelism, edges),
    tasks,
    sourceTasks,
    sinks,
  };
}

/** Where and how a laid-out job runs: the settings of its `config` item that are not derived from the plan. */
export interface ClusterDeployment {
  /** `s3://bucket/prefix` of the checkpoint storage. */
  readonly checkpointDir: string;
  /** Must be the one the plan was laid out with. @default undefined */
  readonly exchangeStream?: string;
  /** The coordinator's options by CheckpointCoordinatorOptions name (intervalMs, timeoutMs, tolerableFailures, ...). */
  readonly checkpointing: Readonly<Record<string, number>>;
  /** Storage URI the first run restores from. @default undefined */
  readonly restoreFrom?: string;
  /** The workers' lease duration. @default undefined (each worker uses its own --lease-duration-ms) */
  readonly leaseDurationMs?: number;
  /** Epoch ms. */
  readonly createdAt: number;
}

/** The control table's `config` item for a slot plan (what `sluice aws init` writes). */
export function clusterConfigItem(plan: SlotPlan, deployment: ClusterDeployment): ClusterConfigItem {
  return {
    fingerprint: plan.fingerprint,
    parallelism: plan.parallelism,
    maxParallelism: plan.maxParallelism,
    edges: plan.edges,
    checkpointDir: deployment.checkpointDir,
    ...(deployment.exchangeStream === undefined ? {} : { exchangeStream: deployment.exchangeStream }),
    checkpointing: deployment.checkpointing,
    tasks: plan.tasks,
    sourceTasks: plan.sourceTasks,
    sinks: plan.sinks,
    ...(deployment.restoreFrom === undefined ? {} : { restoreFrom: deployment.restoreFrom }),
    ...(deployment.leaseDurationMs === undefined ? {} : { leaseDurationMs: deployment.leaseDurationMs }),
    createdAt: deployment.createdAt,
  };
}
