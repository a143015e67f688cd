import type { IConstruct } from 'constructs';
import type { JobCoordinator } from './job-coordinator.ts';
import type { JobStorage } from './job-storage.ts';
import type { JobWorkers } from './job-workers.ts';
import { type AcceptedFinding, wildcardResourceFinding } from './nag-suppressions.ts';

export interface JobParts {
  readonly job: IConstruct;
  readonly jobId: string;
  readonly storage: JobStorage;
  readonly coordinator: JobCoordinator;
  readonly workers: JobWorkers | undefined;
}

/**
 * Every cdk-nag AwsSolutions finding the job accepts, each on the narrowest construct, with the reason. Wildcard
 * resources are accepted pattern by pattern; test/infra checks that each `Resource: *` statement holds only actions
 * that AWS does not scope to resources.
 */
export function acceptedFindings(parts: JobParts): AcceptedFinding[] {
  const { job, jobId, storage, coordinator, workers } = parts;
  const objects = wildcardResourceFinding(job, storage.bucket.arnForObjects(`${jobId}/*`));
  const findings: AcceptedFinding[] = [
    {
      scope: storage.bucket,
      id: 'AwsSolutions-S1',
      reason: 'Only the job\'s own roles read and write checkpoints here; access logs would need a second bucket. Use CloudTrail S3 data events where an audit trail is required.',
    },
    {
      scope: job,
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'Only X-Ray (PutTraceSegments, PutTelemetryRecords, GetSampling*) and CloudWatch Logs vended-log delivery actions, which support no resource-level permissions (test/infra asserts no other action has Resource *).',
    },
    {
      scope: job,
      id: objects,
      reason: `Checkpoint and savepoint objects are created at run time under the job's prefix ${jobId}/ (chk-<id>/..., shared/..., savepoints/...): the prefix is the narrowest scope.`,
    },
  ];
  for (const [scope, resource] of coordinator.executionWildcards) {
    findings.push({
      scope,
      id: wildcardResourceFinding(job, resource),
      reason: 'Execution ARNs are made per execution at run time; the pattern is limited to the executions of this one state machine.',
    });
  }
  if (workers !== undefined) {
    findings.push(
      {
        scope: workers.vpc,
        id: 'AwsSolutions-VPC7',
        reason: 'The VPC carries only the workers\' traffic to AWS service endpoints; flow logs cost per GB and can be enabled where the account\'s policy requires them.',
      },
      {
        scope: workers.taskDefinition,
        id: 'AwsSolutions-ECS2',
        reason: 'The environment holds only resource names (job id, table, checkpoint dir, state dir, region), no secrets.',
      },
      {
        scope: workers.taskDefinition,
        id: wildcardResourceFinding(job, `${storage.sourceStream.streamArn}/consumer/*`),
        reason: 'Enhanced fan-out consumers are registered by the workers at run time; the pattern is limited to consumers of the source stream.',
      },
    );
  }
  return findings;
}
