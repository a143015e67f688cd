import type { OperatorStateRecord } from '../checkpoint/types.ts';
import type { LogicalNode } from './logical-graph.ts';
import type { PhysicalPlan } from './physical-plan.ts';

/** Every source and operator of the plan with what its state means, as a checkpoint of it records them. */
export function operatorStateRecords(plan: PhysicalPlan): OperatorStateRecord[] {
  return plan.vertices.flatMap((vertex) =>
    [...(vertex.source === undefined ? [] : [vertex.source]), ...vertex.chain].map((node) => ({
      nodeId: node.id,
      vertex: vertex.id,
      name: node.name,
      stateful: isStateful(node),
      meaning: node.stateVersion === undefined ? node.stateMeaning : { ...node.stateMeaning, stateVersion: node.stateVersion },
    })),
  );
}

/** Sources (split positions), keyed operators and sinks (transactions) keep state; the others keep none. */
function isStateful(node: LogicalNode): boolean {
  return node.kind === 'source' || node.keyed || node.isSink;
}
