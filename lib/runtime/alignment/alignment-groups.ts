import {
  DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS,
  DEFAULT_MAX_ALLOWED_DRIFT_MS,
  type WatermarkAlignment,
} from '../../contracts/watermark-strategy.ts';
import type { SourceNode } from '../../graph/logical-graph.ts';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';

/**
 * The alignment a source node's splits follow: the strategy's own, else the source's default (its own group, so
 * that two sources are aligned with each other only when the job says so), else none.
 */
export function resolveAlignment(node: SourceNode): WatermarkAlignment | undefined {
  const strategy = node.watermarks;
  if (strategy === undefined || strategy.alignment === null) return undefined;
  if (strategy.alignment !== undefined) return strategy.alignment;
  if (node.source.alignsWatermarks !== true) return undefined;
  return {
    group: `source:${node.id}:${node.name}`,
    maxAllowedDriftMs: DEFAULT_MAX_ALLOWED_DRIFT_MS,
    updateIntervalMs: DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS,
  };
}

/** Names a source subtask in its alignment group. */
export function alignmentMember(vertex: number, subtask: number): string {
  return `${vertex}:${subtask}`;
}

/** Every alignment group of the plan with its members (source subtasks). */
export function alignmentMembers(plan: PhysicalPlan): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const vertex of plan.vertices) {
    const alignment = vertex.source === undefined ? undefined : resolveAlignment(vertex.source);
    if (alignment === undefined) continue;
    const members = groups.get(alignment.group) ?? [];
    for (let s = 0; s < vertex.parallelism; s++) members.push(alignmentMember(vertex.id, s));
    groups.set(alignment.group, members);
  }
  return groups;
}

/**
 * The coordinator's side of watermark alignment (Flink's SourceCoordinator): the minimum watermark of each group
 * over its members, from what they reported. A member that has not reported yet counts as -Infinity (it is about
 * to read from the beginning of its splits, and downstream operators wait for it too); a member reporting
 * `undefined` (idle, or finished) does not count. With no member counting, the minimum is +Infinity: nothing is
 * paused. No I/O: the runner moves reports and minimums between threads.
 */
export class AlignmentGroups {
  private readonly reports = new Map<string, Map<string, number | undefined>>();
  private readonly minimums = new Map<string, number>();

  constructor(private readonly members: ReadonlyMap<string, readonly string[]>) {
    for (const [group, names] of members) {
      this.reports.set(group, new Map());
      this.minimums.set(group, names.length === 0 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY);
    }
  }

  /** The group's current minimum (+Infinity for an unknown group: nothing to wait for). */
  minimum(group: string): number {
    return this.minimums.get(group) ?? Number.POSITIVE_INFINITY;
  }

  /** Records a member's watermark; returns the group's new minimum if it changed, else undefined. */
  report(group: string, member: string, watermark: number | undefined): number | undefined {
    const reports = this.reports.get(group);
    const names = this.members.get(group);
    if (reports === undefined || names === undefined) return undefined;
    reports.set(member, watermark);
    let min = Number.POSITIVE_INFINITY;
    for (const name of names) {
      if (!reports.has(name)) {
        min = Number.NEGATIVE_INFINITY;
        break;
      }
      const wm = reports.get(name);
      if (wm !== undefined && wm < min) min = wm;
    }
    if (min === this.minimums.get(group)) return undefined;
    this.minimums.set(group, min);
    return min;
  }
}
