import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { COMMIT_TABLE_PARTITION_KEY, COMMIT_TABLE_SORT_KEY } from '../../lib/connectors/aws/s3/index.ts';
import { COORDINATOR_HANDLERS, CYCLES_ASL, SUPERVISOR_ASL } from '../../infra/constructs/job-coordinator.ts';
import { STATE_DIR, WORKER_STOP_TIMEOUT_SECONDS, WORKER_UID } from '../../infra/constructs/job-workers.ts';
import { REPO_ROOT } from '../../infra/constructs/lambda-bundling.ts';
import { CONTROL_ASL, CONTROL_HANDLERS } from '../../infra/constructs/job-control.ts';
import { type SynthesizedJob, synthJob } from './synth-job.ts';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown>; DependsOn?: string[]; DeletionPolicy?: string }>;

/** The default deployment (fargate workers from the repository's Dockerfile, EFS state, a new source stream, public subnets), synthesized once. */
let job: SynthesizedJob;
let resources: Resources;
const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);

beforeAll(() => {
  job = synthJob({ jobFlags: ['--table', 'totals'] });
  resources = job.template.toJSON()['Resources'] as Resources;
});

describe('SluiceJob (defaults): storage', () => {
  it('creates a checkpoint bucket with public access blocked, encryption, SSL enforced and a multipart-upload lifecycle', () => {
    job.template.resourceCountIs('AWS::S3::Bucket', 1);
    job.template.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Retain',
      Properties: {
        PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
        BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
        LifecycleConfiguration: { Rules: [Match.objectLike({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' })] },
      },
    });
    job.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('creates the control and commit tables on demand with point-in-time recovery and the keys the runtime uses', () => {
    job.template.resourceCountIs('AWS::DynamoDB::Table', 2);
    const common = {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    };
    job.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: {
        ...common,
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
      },
    });
    job.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: {
        ...common,
        KeySchema: [
          { AttributeName: COMMIT_TABLE_PARTITION_KEY, KeyType: 'HASH' },
          { AttributeName: COMMIT_TABLE_SORT_KEY, KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: COMMIT_TABLE_PARTITION_KEY, AttributeType: 'S' },
          { AttributeName: COMMIT_TABLE_SORT_KEY, AttributeType: 'N' },
        ],
      },
    });
  });

  it('creates an encrypted source stream of `parallelism` shards and no exchange stream', () => {
    job.template.resourceCountIs('AWS::Kinesis::Stream', 1);
    job.template.hasResource('AWS::Kinesis::Stream', {
      DeletionPolicy: 'Retain',
      Properties: { ShardCount: 4, StreamEncryption: { EncryptionType: 'KMS', KeyId: 'alias/aws/kinesis' } },
    });
  });
});

describe('SluiceJob (defaults): coordinator', () => {
  const functionOf = (entry: string) => {
    const id = job.logicalId(job.stack.job.coordinator.functions[entry as keyof typeof COORDINATOR_HANDLERS] as never);
    return resources[id] as Resources[string];
  };

  it('runs every handler on nodejs24.x with X-Ray and the coordinator settings in its environment', () => {
    job.template.resourceCountIs('AWS::Lambda::Function', Object.keys(COORDINATOR_HANDLERS).length + Object.keys(CONTROL_HANDLERS).length + 1);
    for (const name of Object.keys(COORDINATOR_HANDLERS)) {
      const fn = functionOf(name).Properties;
      expect(fn['Runtime']).toBe('nodejs24.x');
      expect(fn['Handler']).toBe('index.handler');
      expect(fn['TracingConfig']).toEqual({ Mode: 'Active' });
      const env = (fn['Environment'] as { Variables: Record<string, unknown> }).Variables;
      expect(env['SLUICE_JOB_ID']).toBe('kinesis-to-dynamodb');
      expect(env['SLUICE_CONTROL_TABLE']).toEqual({ Ref: job.logicalId(job.stack.job.storage.controlTable) });
      expect(job.stack.resolve(job.stack.job.storage.checkpointDir)).toEqual(env['SLUICE_CHECKPOINT_DIR']);
      expect(JSON.stringify(env['SLUICE_CHECKPOINT_DIR'])).toContain('?commitTable=');
    }
  });

  it('gives each Lambda a timeout below the TimeoutSeconds of every Task state that calls it', () => {
    for (const file of [SUPERVISOR_ASL, CYCLES_ASL]) {
      const states = (JSON.parse(readFileSync(join(REPO_ROOT, file), 'utf8')) as { States: Record<string, { Type: string; Resource?: string; TimeoutSeconds?: number }> }).States;
      for (const [stateName, state] of Object.entries(states)) {
        const handler = Object.entries(COORDINATOR_HANDLERS).find(([, h]) => state.Resource === `\${${h.placeholder}}`);
        if (handler === undefined) continue;
        const timeout = functionOf(handler[0]).Properties['Timeout'] as number;
        expect(timeout, `${file} ${stateName}`).toBeLessThan(state.TimeoutSeconds ?? 60);
      }
    }
  });

  it('builds the supervisor (Standard) and cycles (Express) from the ASL files unchanged, logging ALL with X-Ray', () => {
    expect(ofType('AWS::StepFunctions::StateMachine')).toHaveLength(3);
    const coordinatorIds = [job.stack.job.coordinator.supervisor, job.stack.job.coordinator.cycles].map((m) => job.logicalId(m));
    const machines = ofType('AWS::StepFunctions::StateMachine').filter(([id]) => coordinatorIds.includes(id));
    expect(machines).toHaveLength(2);
    const byType: Record<string, Record<string, unknown>> = Object.fromEntries(machines.map(([, m]) => [m.Properties['StateMachineType'] as string, m.Properties]));
    expect(byType['STANDARD']?.['DefinitionString']).toBe(readFileSync(join(REPO_ROOT, SUPERVISOR_ASL), 'utf8'));
    expect(byType['EXPRESS']?.['DefinitionString']).toBe(readFileSync(join(REPO_ROOT, CYCLES_ASL), 'utf8'));
    for (const m of Object.values(byType)) {
      expect(m['TracingConfiguration']).toEqual({ Enabled: true });
      expect(m['LoggingConfiguration']).toMatchObject({ Level: 'ALL', IncludeExecutionData: true });
    }
    const supervisorSubs = byType['STANDARD']?.['DefinitionSubstitutions'] as Record<string, unknown>;
    // The supervisor's own ARN (ContinueAsNew) is the ARN its fixed name gives.
    const supervisorName = byType['STANDARD']?.['StateMachineName'] as string;
    expect(JSON.stringify(supervisorSubs['SupervisorStateMachineArn'])).toContain(`:stateMachine:${supervisorName}`);
    expect(JSON.stringify(supervisorSubs['CyclesStateMachineArn'])).toContain(`:stateMachine:${byType['EXPRESS']?.['StateMachineName'] as string}`);
    for (const [name, handler] of Object.entries(COORDINATOR_HANDLERS)) {
      expect(supervisorSubs[handler.placeholder]).toEqual({ 'Fn::GetAtt': [job.logicalId(job.stack.job.coordinator.functions[name as keyof typeof COORDINATOR_HANDLERS] as never), 'Arn'] });
    }
  });

  it('builds the Standard control machine from its ASL file, bound to its handlers and the supervisor, logging ALL with X-Ray', () => {
    const control = resources[job.logicalId(job.stack.job.control.stateMachine)]?.Properties as Record<string, unknown>;
    expect(control['StateMachineType']).toBe('STANDARD');
    expect(control['DefinitionString']).toBe(readFileSync(join(REPO_ROOT, CONTROL_ASL), 'utf8'));
    expect(control['TracingConfiguration']).toEqual({ Enabled: true });
    expect(control['LoggingConfiguration']).toMatchObject({ Level: 'ALL', IncludeExecutionData: true });
    const subs = control['DefinitionSubstitutions'] as Record<string, unknown>;
    expect(Object.keys(subs).sort()).toEqual(['AwaitResultFunctionArn', 'FileRequestFunctionArn', 'SupervisorStateMachineArn']);
    expect(subs['SupervisorStateMachineArn']).toEqual({ Ref: job.logicalId(job.stack.job.coordinator.supervisor) });
    for (const [name, handler] of Object.entries(CONTROL_HANDLERS)) {
      const id = job.logicalId(job.stack.job.control.functions[name as keyof typeof CONTROL_HANDLERS] as never);
      expect(subs[handler.placeholder]).toEqual({ 'Fn::GetAtt': [id, 'Arn'] });
      const fn = resources[id]?.Properties as Record<string, unknown>;
      expect(fn['Runtime']).toBe('nodejs24.x');
      expect((fn['Environment'] as { Variables: Record<string, unknown> }).Variables).toMatchObject({
        SLUICE_JOB_ID: 'kinesis-to-dynamodb',
        SLUICE_CONTROL_TABLE: { Ref: job.logicalId(job.stack.job.storage.controlTable) },
      });
      expect(fn['Timeout']).toBeLessThan(60);
    }
  });

  it('starts the supervisor through a custom resource that depends on both machines and the storage', () => {
    const [[id, resource]] = ofType('Custom::SluiceSupervisor') as [[string, Resources[string]]];
    expect(id).toBeDefined();
    const supervisorId = job.logicalId(job.stack.job.coordinator.supervisor);
    expect(resource.Properties['SupervisorArn']).toEqual({ Ref: supervisorId });
    expect(resource.DependsOn).toEqual(expect.arrayContaining([supervisorId, job.logicalId(job.stack.job.coordinator.cycles), job.logicalId(job.stack.job.storage.controlTable)]));
    const token = resource.Properties['ServiceToken'] as { 'Fn::GetAtt': [string, string] };
    const fn = resources[token['Fn::GetAtt'][0]];
    expect(fn?.Type).toBe('AWS::Lambda::Function');
    expect(fn?.Properties['Runtime']).toBe('nodejs24.x');
  });
});

describe('SluiceJob (defaults): workers', () => {
  it('runs an ECS cluster with Container Insights and a Fargate service with a circuit breaker', () => {
    job.template.hasResourceProperties('AWS::ECS::Cluster', { ClusterSettings: [{ Name: 'containerInsights', Value: 'enabled' }] });
    job.template.hasResourceProperties('AWS::ECS::Service', {
      LaunchType: 'FARGATE',
      DesiredCount: 2,
      DeploymentConfiguration: Match.objectLike({ DeploymentCircuitBreaker: { Enable: true, Rollback: true }, MinimumHealthyPercent: 100 }),
      NetworkConfiguration: { AwsvpcConfiguration: Match.objectLike({ AssignPublicIp: 'ENABLED' }) },
    });
  });

  it('defines the worker task: x86_64, awslogs, stopTimeout 120, the job and its flags, task and execution roles', () => {
    const [[, task]] = ofType('AWS::ECS::TaskDefinition') as [[string, Resources[string]]];
    const p = task.Properties;
    expect(p).toMatchObject({ Cpu: '1024', Memory: '2048', RequiresCompatibilities: ['FARGATE'], RuntimePlatform: { CpuArchitecture: 'X86_64', OperatingSystemFamily: 'LINUX' } });
    expect(p['TaskRoleArn']).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/TaskRole/), 'Arn'] });
    expect(p['ExecutionRoleArn']).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/ExecutionRole/), 'Arn'] });
    const [container] = p['ContainerDefinitions'] as Record<string, unknown>[];
    expect(container).toMatchObject({
      StopTimeout: WORKER_STOP_TIMEOUT_SECONDS,
      Command: ['--table', 'totals'],
      LogConfiguration: { LogDriver: 'awslogs' },
      MountPoints: [{ SourceVolume: 'state', ContainerPath: STATE_DIR, ReadOnly: false }],
    });
    const env = Object.fromEntries((container?.['Environment'] as { Name: string; Value: unknown }[]).map((e) => [e.Name, e.Value]));
    expect(Object.keys(env).sort()).toEqual(['AWS_REGION', 'SLUICE_CHECKPOINT_DIR', 'SLUICE_CONTROL_TABLE', 'SLUICE_JOB_ID', 'SLUICE_STATE_DIR']);
    expect(env['SLUICE_STATE_DIR']).toBe(STATE_DIR);
    expect(p['Volumes']).toEqual([
      {
        Name: 'state',
        EFSVolumeConfiguration: {
          FilesystemId: { Ref: expect.any(String) },
          TransitEncryption: 'ENABLED',
          AuthorizationConfig: { AccessPointId: { Ref: expect.any(String) }, IAM: 'ENABLED' },
        },
      },
    ]);
  });

  it("builds the worker image from the repository's Dockerfile for linux/amd64 with the job module as build argument", () => {
    const [[, task]] = ofType('AWS::ECS::TaskDefinition') as [[string, Resources[string]]];
    const [container] = task.Properties['ContainerDefinitions'] as { Image: unknown }[];
    expect(JSON.stringify(container?.Image)).toContain('container-assets');
    const assembly = job.app.synth();
    const manifest = JSON.parse(readFileSync(join(assembly.directory, `${job.stack.artifactId}.assets.json`), 'utf8')) as {
      dockerImages: Record<string, { source: Record<string, unknown> }>;
    };
    const images = Object.values(manifest.dockerImages);
    expect(images).toHaveLength(1);
    expect(images[0]?.source).toMatchObject({ dockerBuildArgs: { JOB: 'examples/kinesis-to-dynamodb.ts' }, platform: 'linux/amd64', dockerFile: 'Dockerfile' });
  });

  it('keeps state on an encrypted Elastic-throughput EFS through an access point with a fixed uid, reachable only from the service', () => {
    job.template.hasResource('AWS::EFS::FileSystem', { DeletionPolicy: 'Retain', Properties: Match.objectLike({ Encrypted: true, ThroughputMode: 'elastic' }) });
    job.template.hasResourceProperties('AWS::EFS::AccessPoint', {
      PosixUser: { Uid: WORKER_UID, Gid: WORKER_UID },
      RootDirectory: { Path: '/sluice', CreationInfo: { OwnerUid: WORKER_UID, OwnerGid: WORKER_UID, Permissions: '750' } },
    });
    job.template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', { IpProtocol: 'tcp', FromPort: 2049, ToPort: 2049 });
    // A VPC with public subnets only: no NAT gateway to pay for.
    job.template.resourceCountIs('AWS::EC2::NatGateway', 0);
  });
});

describe('SluiceJob (defaults): monitoring and outputs', () => {
  const alarm = (suffix: string) => {
    const found = ofType('AWS::CloudWatch::Alarm').find(([id]) => id.includes(suffix));
    expect(found, suffix).toBeDefined();
    return (found as [string, Resources[string]])[1].Properties;
  };

  it('counts checkpoints, aborts and slot restarts from the JSON event logs of this job', () => {
    const filters = ofType('AWS::Logs::MetricFilter').map(([, f]) => f.Properties);
    const byName = Object.fromEntries(filters.map((f) => [(f['MetricTransformations'] as { MetricName: string }[])[0]?.MetricName, f]));
    expect(Object.keys(byName).sort()).toEqual(['CheckpointsAborted', 'CheckpointsCompleted', 'LeasesLost', 'SinksCommitted', 'SlotRestarts', 'SlotsStarted']);
    expect(byName['CheckpointsCompleted']?.['FilterPattern']).toBe('{ ($.event = "checkpoint-completed") && ($.jobId = "kinesis-to-dynamodb") }');
    expect(byName['SlotRestarts']?.['FilterPattern']).toBe('{ ($.event = "slot-failed") && ($.jobId = "kinesis-to-dynamodb") }');
  });

  it('alarms on no checkpoint in 3 intervals, 3 aborts in a row, iterator age, failed executions and a slot restart loop', () => {
    expect(ofType('AWS::CloudWatch::Alarm')).toHaveLength(6);
    expect(alarm('NoCheckpoint')).toMatchObject({
      MetricName: 'CheckpointsCompleted',
      Namespace: 'Sluice',
      Dimensions: [{ Name: 'JobId', Value: 'kinesis-to-dynamodb' }],
      Period: 180,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
    const aborts = alarm('AbortsInARow');
    expect(JSON.stringify(aborts['Metrics'])).toContain('IF(aborted >= 3 AND FILL(completed, 0) == 0, 1, 0)');
    expect(alarm('IteratorAge')).toMatchObject({ MetricName: 'GetRecords.IteratorAgeMilliseconds', Namespace: 'AWS/Kinesis', Threshold: 300000, Statistic: 'Maximum' });
    expect(JSON.stringify(alarm('SupervisorExecutionsFailed')['Metrics'])).toContain('ExecutionsFailed');
    expect(JSON.stringify(alarm('CyclesExecutionsFailed')['Metrics'])).toContain('ExecutionsTimedOut');
    expect(alarm('SlotRestartLoop')).toMatchObject({ MetricName: 'SlotRestarts', Threshold: 3, EvaluationPeriods: 3, Period: 300 });
  });

  it('has a dashboard with records/s, iterator age, checkpoints, slots and executions', () => {
    const [[, dashboard]] = ofType('AWS::CloudWatch::Dashboard') as [[string, Resources[string]]];
    const body = JSON.stringify(dashboard.Properties['DashboardBody']);
    for (const title of ['Records/s', 'Iterator age', 'Checkpoints', 'Slots', 'Supervisor executions', 'Cycles executions']) expect(body).toContain(title);
  });

  it('outputs the bucket, tables, state machine ARNs, dashboard URL and the sluice aws commands', () => {
    const outputs = job.template.toJSON()['Outputs'] as Record<string, { Value: unknown }>;
    const names = Object.keys(outputs).map((k) => k.replace(/^Job/, '').replace(/[A-F0-9]{8}$/, ''));
    expect(names).toEqual(
      expect.arrayContaining(['CheckpointBucket', 'ControlTable', 'CommitTable', 'SupervisorStateMachineArn', 'CyclesStateMachineArn', 'DashboardUrl', 'StatusCommand', 'InitCommand']),
    );
    const status = Object.entries(outputs).find(([k]) => k.includes('StatusCommand'))?.[1].Value;
    expect(JSON.stringify(status)).toContain('npx sluice aws status --job-id kinesis-to-dynamodb --control-table ');
    const init = JSON.stringify(Object.entries(outputs).find(([k]) => k.includes('InitCommand'))?.[1].Value);
    expect(init).toContain('--parallelism 4 --checkpoint-interval-ms 60000 --table totals');
  });
});
