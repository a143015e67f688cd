import type { OperatorStateRecord } from '../checkpoint/types.ts';
import { keyGroupHashOf, type LogicalNode } from './logical-graph.ts';
import type { PhysicalPlan } from './physical-plan.ts';

/** Every source and operator of the plan with what its state means, as a checkpoint of it records them. */
export function operatorStateRecords(plan: PhysicalPlan): OperatorStateRecord[] {
  return plan.vertices.flatMap((vertex) =>
    [...(vertex.source === undefined ? [] : [vertex.source]), ...vertex.chain].map((node) => ({
      nodeId: node.id,
      vertex: vertex.id,
      name: node.name,
      stateful: isStateful(node),
      meaning: meaningOf(node),
    })),
  );
}

/**
 * The node's state meaning plus its state version and, for a keyed operator on kinesis-hash key groups, that hash:
 * its state is placed by another function, so a restore across hashes is refused (murmur adds nothing, so
 * checkpoints of existing jobs keep matching).
 */
function meaningOf(node: LogicalNode): OperatorStateRecord['meaning'] {
  const hash = node.kind === 'operator' && node.keyed ? keyGroupHashOf(node) : 'murmur';
  if (node.stateVersion === undefined && hash === 'murmur') return node.stateMeaning;
  return {
    ...node.stateMeaning,
    ...(node.stateVersion === undefined ? {} : { stateVersion: node.stateVersion }),
    ...(hash === 'murmur' ? {} : { keyGroups: hash }),
  };
}

/** Sources (split positions), keyed operators and sinks (transactions) keep state; the others keep none. */
function isStateful(node: LogicalNode): boolean {
  return node.kind === 'source' || node.keyed || node.isSink;
}
