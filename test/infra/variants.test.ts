import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { STATE_DIR } from '../../infra/constructs/job-workers.ts';
import { compileSluiceJobProps } from '../../infra/constructs/sluice-job-props.ts';
import { ConfigError } from '../../lib/core/errors.ts';
import { SluiceJobStack } from '../../infra/sluice-job-stack.ts';
import { ENV, REGISTRY_IMAGE, synthJob } from './synth-job.ts';

const IMPORTED = 'arn:aws:kinesis:us-east-1:123456789012:stream/orders';

describe('SluiceJob variants', () => {
  it("workersMode 'external' creates no ECS, EFS or VPC, passes cdk-nag, and keeps storage, coordinator and outputs", () => {
    const job = synthJob({ workersMode: 'external', stream: IMPORTED, exchange: true, removalPolicy: RemovalPolicy.DESTROY });
    const types = new Set(Object.values(job.template.toJSON()['Resources'] as Record<string, { Type: string }>).map((r) => r.Type));
    for (const absent of ['AWS::ECS::Cluster', 'AWS::ECS::Service', 'AWS::ECS::TaskDefinition', 'AWS::EFS::FileSystem', 'AWS::EC2::VPC', 'AWS::EC2::SecurityGroup']) {
      expect(types.has(absent), absent).toBe(false);
    }
    for (const present of ['AWS::S3::Bucket', 'AWS::DynamoDB::Table', 'AWS::StepFunctions::StateMachine', 'Custom::SluiceSupervisor', 'AWS::CloudWatch::Dashboard']) {
      expect(types.has(present), present).toBe(true);
    }
    // The imported source stream is not created; the exchange stream of P shards is, and is not retained.
    job.template.resourceCountIs('AWS::Kinesis::Stream', 1);
    job.template.hasResource('AWS::Kinesis::Stream', { DeletionPolicy: 'Delete', Properties: { ShardCount: 4 } });
    job.template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
    // Alarms on the imported stream's iterator age; no slot-restart alarm without worker logs.
    job.template.hasResourceProperties('AWS::CloudWatch::Alarm', { Dimensions: [{ Name: 'StreamName', Value: 'orders' }], MetricName: 'GetRecords.IteratorAgeMilliseconds' });
    job.template.resourceCountIs('AWS::CloudWatch::Alarm', 5);
    const report = new AwsSolutionsChecks(job.app).validateScope(job.stack);
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });

  it("'ephemeral' state on private subnets behind a NAT: no EFS, state on the task's disk, no public IP, an alarm topic", () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new SluiceJobStack(app, 'Ephemeral', {
      env: ENV,
      job: { jobModule: 'jobs/totals.ts', jobId: 'totals', stateStorage: 'ephemeral', alarmTopic: Topic.fromTopicArn(new Stack(app, 'Shared', { env: ENV }), 'Topic', 'arn:aws:sns:us-east-1:123456789012:oncall'), network: 'private-nat', workers: 3, parallelism: 6, cpu: 2048, memoryMiB: 4096, checkpointIntervalMs: 10_000, workerImage: REGISTRY_IMAGE },
    });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::EFS::FileSystem', 0);
    template.resourceCountIs('AWS::EC2::NatGateway', 1);
    template.hasResourceProperties('AWS::ECS::Service', { DesiredCount: 3, NetworkConfiguration: { AwsvpcConfiguration: { AssignPublicIp: 'DISABLED' } } });
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      Cpu: '2048',
      Memory: '4096',
      ContainerDefinitions: [
        Match.objectLike({
          Environment: Match.arrayWith([{ Name: 'SLUICE_JOB_ID', Value: 'totals' }, { Name: 'SLUICE_STATE_DIR', Value: STATE_DIR }]),
          Command: Match.absent(),
        }),
      ],
      Volumes: Match.absent(),
    });
    template.hasResourceProperties('AWS::Kinesis::Stream', { ShardCount: 6 });
    // Three 10 s intervals round up to one CloudWatch minute.
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'CheckpointsCompleted', Period: 60 });
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(6);
    for (const alarm of alarms) expect(alarm['Properties']['AlarmActions']).toEqual(['arn:aws:sns:us-east-1:123456789012:oncall']);
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });
});

describe('SluiceJob props', () => {
  const base = { jobModule: 'examples/kinesis-to-dynamodb.ts' };
  it('applies the documented defaults', () => {
    expect(compileSluiceJobProps(base)).toMatchObject({
      jobId: 'kinesis-to-dynamodb',
      jobFlags: [],
      parallelism: 4,
      workers: 2,
      cpu: 1024,
      memoryMiB: 2048,
      stream: undefined,
      exchange: false,
      stateStorage: 'efs',
      checkpointIntervalMs: 60_000,
      network: 'public-subnets',
      workersMode: 'fargate',
      removalPolicy: RemovalPolicy.RETAIN,
      sinkTables: [],
      iteratorAgeAlarmMs: 300_000,
    });
  });

  it.each([
    [{ parallelism: 0 }, /parallelism must be an integer from 1/],
    [{ workers: 1.5 }, /workers must be an integer/],
    [{ stateStorage: 'disk' as never }, /stateStorage must be one of efs, ephemeral, got "disk"/],
    [{ network: 'vpn' as never }, /network must be one of/],
    [{ workersMode: 'lambda' as never }, /workersMode must be one of fargate, external/],
    [{ stream: 'orders' }, /stream must be a Kinesis stream ARN/],
    [{ jobId: 'a b' }, /jobId "a b" may have only/],
    [{ sinkTables: ['x'] }, /sinkTables has "x"/],
    [{ jobModule: ' ' }, /jobModule is empty/],
    [{ workersMode: 'external' as const, workerImage: REGISTRY_IMAGE }, /'external' creates no workers/],
  ])('refuses %o with a ConfigError naming the prop', (props, message) => {
    let error: unknown;
    try {
      compileSluiceJobProps({ ...base, ...props });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
  });
});
