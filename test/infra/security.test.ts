import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { OBJECT_ACTIONS, TABLE_READ_ACTIONS, TABLE_WRITE_ACTIONS } from '../../infra/constructs/access.ts';
import { REGISTRY_IMAGE, type SynthesizedJob, synthJob } from './synth-job.ts';

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}
type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/**
 * Actions AWS authorizes only with `Resource: *` (no resource-level permissions): X-Ray segments and sampling, the
 * CloudWatch Logs vended-log delivery that Step Functions logging uses, and ECR's registry token.
 */
const RESOURCE_STAR_ACTIONS = new Set([
  'xray:PutTraceSegments',
  'xray:PutTelemetryRecords',
  'xray:GetSamplingRules',
  'xray:GetSamplingTargets',
  'logs:CreateLogDelivery',
  'logs:GetLogDelivery',
  'logs:UpdateLogDelivery',
  'logs:DeleteLogDelivery',
  'logs:ListLogDeliveries',
  'logs:PutResourcePolicy',
  'logs:DescribeResourcePolicies',
  'logs:DescribeLogGroups',
  'ecr:GetAuthorizationToken',
]);

const list = <T>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);

/** Every statement of every policy, by the role it is attached to. */
function statementsByRole(resources: Resources): Map<string, Statement[]> {
  const byRole = new Map<string, Statement[]>();
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const statements = (resource.Properties['PolicyDocument'] as { Statement: Statement[] }).Statement;
    for (const role of resource.Properties['Roles'] as { Ref: string }[]) byRole.set(role.Ref, [...(byRole.get(role.Ref) ?? []), ...statements]);
  }
  return byRole;
}

function actionsOf(statements: readonly Statement[]): string[] {
  return [...new Set(statements.flatMap((s) => list(s.Action)))].sort();
}

/** With a sink table and the exchange stream, so every kind of statement is present. */
let job: SynthesizedJob;
let resources: Resources;
let byRole: Map<string, Statement[]>;

beforeAll(() => {
  job = synthJob({ workerImage: REGISTRY_IMAGE, sinkTables: ['totals'], exchange: true });
  resources = job.template.toJSON()['Resources'] as Resources;
  byRole = statementsByRole(resources);
});

describe('IAM: least privilege', () => {
  it('grants no wildcard action, and Resource * only to actions without resource-level permissions', () => {
    expect(byRole.size).toBeGreaterThanOrEqual(12);
    for (const [role, statements] of byRole) {
      for (const s of statements) {
        expect(s.Effect).toBe('Allow');
        for (const action of list(s.Action)) expect(action, `${role}: ${action}`).not.toContain('*');
        if (list(s.Resource).includes('*')) {
          for (const action of list(s.Action)) expect(RESOURCE_STAR_ACTIONS.has(action), `${role}: ${action} on *`).toBe(true);
        }
      }
    }
    // No role carries a managed policy (AWSLambdaBasicExecutionRole and the like grant more than is used).
    for (const [id, r] of Object.entries(resources)) if (r.Type === 'AWS::IAM::Role') expect(r.Properties['ManagedPolicyArns'], id).toBeUndefined();
  });

  it('gives each coordinator handler the tables, the job prefix and its log group; only Recover and CommitSinks the sink tables', () => {
    const coordinator = job.stack.job.coordinator;
    const tableActions = [...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS];
    for (const [name, fn] of Object.entries(coordinator.functions)) {
      const statements = byRole.get(job.logicalId(fn.role as never)) ?? [];
      const sinkWriter = name === 'Recover' || name === 'CommitSinks';
      const expected = [...tableActions, ...OBJECT_ACTIONS, 's3:ListBucket', 'logs:CreateLogStream', 'logs:PutLogEvents', 'xray:PutTraceSegments', 'xray:PutTelemetryRecords'];
      if (sinkWriter) expected.push('dynamodb:DescribeTable');
      expect(actionsOf(statements), name).toEqual([...new Set(expected)].sort());
      const sink = statements.find((s) => JSON.stringify(s.Resource).includes(':table/totals'));
      expect(sink !== undefined, `${name} sink table access`).toBe(sinkWriter);
      // Objects only under the job's prefix; listing only of that prefix.
      const objects = statements.find((s) => list(s.Action).includes('s3:PutObject'));
      expect(JSON.stringify(objects?.Resource)).toContain('/kinesis-to-dynamodb/*');
      const listing = statements.find((s) => list(s.Action).includes('s3:ListBucket'));
      expect(listing?.Condition).toEqual({ StringLike: { 's3:prefix': ['kinesis-to-dynamodb', 'kinesis-to-dynamodb/*'] } });
    }
  });

  it('lets each state machine invoke only the handlers of its own Task states', () => {
    const { supervisor, cycles, functions } = job.stack.job.coordinator;
    const invoked = (machine: typeof supervisor) =>
      (byRole.get(job.logicalId(machine.role as never)) ?? [])
        .filter((s) => list(s.Action).includes('lambda:InvokeFunction'))
        .flatMap((s) => list(s.Resource))
        .map((r) => (r as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0])
        .sort();
    expect(invoked(supervisor)).toEqual([functions.Recover, functions.Abort].map((f) => job.logicalId(f as never)).sort());
    expect(invoked(cycles)).toEqual([functions.Trigger, functions.CollectAcks, functions.CommitSinks, functions.Abort].map((f) => job.logicalId(f as never)).sort());
    const supervisorActions = actionsOf(byRole.get(job.logicalId(supervisor.role as never)) ?? []).filter((a) => !a.startsWith('logs:') && !a.startsWith('xray:'));
    expect(supervisorActions).toEqual(['events:DescribeRule', 'events:PutRule', 'events:PutTargets', 'lambda:InvokeFunction', 'states:DescribeExecution', 'states:StartExecution', 'states:StopExecution']);
    const cyclesActions = actionsOf(byRole.get(job.logicalId(cycles.role as never)) ?? []).filter((a) => !a.startsWith('logs:') && !a.startsWith('xray:'));
    expect(cyclesActions).toEqual(['lambda:InvokeFunction']);
  });

  it('gives the control handlers only the control table and their log group; the control machine only its handlers and the supervisor', () => {
    const control = job.stack.job.control;
    for (const [name, fn] of Object.entries(control.functions)) {
      const statements = byRole.get(job.logicalId(fn.role as never)) ?? [];
      expect(actionsOf(statements), name).toEqual([...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS, 'logs:CreateLogStream', 'logs:PutLogEvents', 'xray:PutTraceSegments', 'xray:PutTelemetryRecords'].sort());
      const table = statements.find((s) => list(s.Action).includes('dynamodb:PutItem'));
      expect(table?.Resource).toEqual({ 'Fn::GetAtt': [job.logicalId(job.stack.job.storage.controlTable), 'Arn'] });
    }
    const machine = byRole.get(job.logicalId(control.stateMachine.role as never)) ?? [];
    expect(actionsOf(machine).filter((a) => !a.startsWith('logs:') && !a.startsWith('xray:'))).toEqual(['lambda:InvokeFunction', 'states:StartExecution']);
    const start = machine.find((s) => list(s.Action).includes('states:StartExecution'));
    expect(start?.Resource).toEqual({ Ref: job.logicalId(job.stack.job.coordinator.supervisor) });
    const invoke = machine.find((s) => list(s.Action).includes('lambda:InvokeFunction'));
    expect(list(invoke?.Resource).map((r) => (r as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]).sort()).toEqual(
      Object.values(control.functions).map((f) => job.logicalId(f as never)).sort(),
    );
  });

  it('gives the worker task role the control table, the job prefix, the streams and EFS through the access point only', () => {
    const workers = job.stack.job.workers;
    expect(workers).toBeDefined();
    const statements = byRole.get(job.logicalId(workers?.taskDefinition.taskRole as never)) ?? [];
    expect(actionsOf(statements)).toEqual(
      [
        ...TABLE_READ_ACTIONS,
        ...TABLE_WRITE_ACTIONS,
        ...OBJECT_ACTIONS,
        's3:ListBucket',
        'kinesis:DescribeStreamSummary',
        'kinesis:ListShards',
        'kinesis:GetShardIterator',
        'kinesis:GetRecords',
        'kinesis:RegisterStreamConsumer',
        'kinesis:DescribeStreamConsumer',
        'kinesis:SubscribeToShard',
        'kinesis:PutRecords',
        'elasticfilesystem:ClientMount',
        'elasticfilesystem:ClientWrite',
      ].sort(),
    );
    const commitTable = job.logicalId(job.stack.job.storage.commitTable);
    const commitStatements = statements.filter((s) => JSON.stringify(s.Resource).includes(commitTable));
    expect(actionsOf(commitStatements)).toEqual([...TABLE_READ_ACTIONS].sort());
    const put = statements.find((s) => list(s.Action).includes('kinesis:PutRecords'));
    expect(put?.Resource).toEqual({ 'Fn::GetAtt': [job.logicalId(job.stack.job.storage.exchangeStream as never), 'Arn'] });
    const efs = statements.find((s) => list(s.Action).includes('elasticfilesystem:ClientMount'));
    expect(efs?.Condition).toEqual({
      StringEquals: { 'elasticfilesystem:AccessPointArn': expect.anything() },
      Bool: { 'elasticfilesystem:AccessedViaMountTarget': 'true' },
    });
    // No sink table for the workers: they only prepare; the coordinator commits.
    expect(JSON.stringify(statements)).not.toContain(':table/totals');
  });

  it('lets the supervisor custom resource only start, list and stop supervisor executions', () => {
    const resourceRole = Object.keys(resources).find((id) => id.includes('SupervisorResourceRole') && resources[id]?.Type === 'AWS::IAM::Role') as string;
    const statements = byRole.get(resourceRole) ?? [];
    expect(actionsOf(statements)).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents', 'states:ListExecutions', 'states:StartExecution', 'states:StopExecution', 'xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
    const stop = statements.find((s) => list(s.Action).includes('states:StopExecution'));
    expect(JSON.stringify(stop?.Resource)).toMatch(/:execution:[^"]*-supervisor:\*/);
  });
});

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing that is not acknowledged, and every acknowledgment has a reason', () => {
    const report = new AwsSolutionsChecks(job.app).validateScope(job.stack);
    expect(report.violations.map((v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.resourceLogicalId).join(', ')}`)).toEqual([]);
    expect(job.stack.job.acceptedFindings.length).toBeGreaterThan(0);
    for (const finding of job.stack.job.acceptedFindings) {
      expect(finding.id).toMatch(/^AwsSolutions-[A-Z]+\d+(\[.+\])?$/);
      expect(finding.reason.length, finding.id).toBeGreaterThan(40);
    }
  });

  it('would report the accepted findings without their acknowledgments (the check sees them)', () => {
    // Same stack, acknowledgments removed from the construct metadata: cdk-nag must report them again.
    const key = 'aws:cdk:acknowledged-rules';
    let removed = 0;
    for (const c of job.stack.node.findAll()) {
      const node = c.node as unknown as { _metadata?: { type: string }[] };
      const before = node._metadata?.length ?? 0;
      if (node._metadata !== undefined) node._metadata = node._metadata.filter((m) => m.type !== key);
      removed += before - (node._metadata?.length ?? 0);
    }
    expect(removed).toBeGreaterThan(0);
    const report = new AwsSolutionsChecks(job.app).validateScope(job.stack);
    const rules = new Set(report.violations.map((v) => v.ruleName));
    for (const id of ['AwsSolutions-S1', 'AwsSolutions-VPC7', 'AwsSolutions-ECS2', 'AwsSolutions-IAM5[Resource::*]']) expect([...rules]).toContain(id);
  });
});
