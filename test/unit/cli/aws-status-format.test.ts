import { describe, expect, it } from 'vitest';
import { formatClusterStatus } from '../../../lib/cli/aws-status-format.ts';
import type { ClusterConfigItem, ControlItem } from '../../../lib/cluster/control-items.ts';
import type { ClusterJobStatus } from '../../../lib/cluster/job-status.ts';

const config: ClusterConfigItem = {
  fingerprint: 'f'.repeat(64),
  parallelism: 2,
  maxParallelism: 128,
  edges: [],
  checkpointDir: 's3://b/j',
  checkpointing: {},
  tasks: [],
  sourceTasks: [],
  sinks: [],
  createdAt: 1,
};

function status(control: ControlItem): ClusterJobStatus {
  return { jobId: 'j', config, control, coordinator: undefined, leases: [], requests: [] };
}

describe('sluice aws status text: halted and resumed jobs', () => {
  const savepoint = 's3://b/j/savepoints/savepoint-0000000009-1';

  it('says where a halted job stopped, and not that it resumed', () => {
    const lines = formatClusterStatus(status({ leaseGeneration: 1, sinkCommittedThrough: 9, halted: { checkpointId: 9, savepointPath: savepoint } }), 0);
    expect(lines).toContain(`  halted after savepoint 9: ${savepoint}`);
    expect(lines.join('\n')).not.toContain('resumed');
  });

  it('says which savepoint a resumed job restarted from, by which request', () => {
    const resumed = { requestId: 'resume-1', checkpointId: 9, savepointPath: savepoint, at: 5 };
    const lines = formatClusterStatus(status({ leaseGeneration: 1, sinkCommittedThrough: 9, resumed }), 0);
    expect(lines).toContain(`  resumed from savepoint 9: ${savepoint} (request resume-1)`);
    // Halted again after a resume: the halt is what counts.
    const again = formatClusterStatus(status({ leaseGeneration: 2, sinkCommittedThrough: 12, resumed, halted: { checkpointId: 12, savepointPath: 's3://b/j/savepoints/sp-12' } }), 0);
    expect(again.join('\n')).not.toContain('resumed from');
  });
});
