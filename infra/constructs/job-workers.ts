import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { type IVpc, SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import {
  AwsLogDriver,
  Cluster,
  ContainerImage,
  ContainerInsights,
  CpuArchitecture,
  FargateService,
  FargateTaskDefinition,
  OperatingSystemFamily,
} from 'aws-cdk-lib/aws-ecs';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import type { AccessPoint} from 'aws-cdk-lib/aws-efs';
import { FileSystem, PerformanceMode, ThroughputMode } from 'aws-cdk-lib/aws-efs';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { checkpointObjects, tableRead, tableReadWrite } from './access.ts';
import type { JobStorage } from './job-storage.ts';
import { REPO_ROOT } from './lambda-bundling.ts';
import type { SluiceJobSettings } from './sluice-job-props.ts';

/** The uid/gid the access point writes as: the worker image's non-root user. */
export const WORKER_UID = '1000';
/**
 * The state directory in the worker container: the image's, owned by its non-root user (uid 1000); with EFS the
 * access point's mount replaces it.
 */
export const STATE_DIR = '/var/lib/sluice/state';
/** ECS waits this long after SIGTERM: the worker stops its slots and releases its leases within 110 s. */
export const WORKER_STOP_TIMEOUT_SECONDS = 120;

const SOURCE_READ_ACTIONS = ['kinesis:DescribeStreamSummary', 'kinesis:ListShards', 'kinesis:GetShardIterator', 'kinesis:GetRecords'];
const FAN_OUT_ACTIONS = ['kinesis:RegisterStreamConsumer', 'kinesis:DescribeStreamConsumer', 'kinesis:SubscribeToShard'];

/**
 * The repository's Dockerfile, built for linux/amd64 with the job module bundled in (`--build-arg JOB`). Synth needs
 * no Docker: the asset is built and pushed only at deploy time.
 */
export function workerImageAsset(jobModule: string): ContainerImage {
  return ContainerImage.fromAsset(REPO_ROOT, { file: 'Dockerfile', platform: Platform.LINUX_AMD64, buildArgs: { JOB: jobModule } });
}

/** The slot workers: VPC, ECS cluster, Fargate service and its roles, and the EFS state directory. */
export class JobWorkers extends Construct {
  readonly vpc: IVpc;
  readonly cluster: Cluster;
  readonly service: FargateService;
  readonly taskDefinition: FargateTaskDefinition;
  readonly logGroup: LogGroup;
  readonly fileSystem: FileSystem | undefined;
  readonly accessPoint: AccessPoint | undefined;

  constructor(scope: Construct, id: string, settings: SluiceJobSettings, storage: JobStorage) {
    super(scope, id);
    const privateNat = settings.network === 'private-nat';
    this.vpc =
      settings.vpc ??
      new Vpc(this, 'Vpc', {
        maxAzs: 2,
        natGateways: privateNat ? 1 : 0,
        subnetConfiguration: privateNat
          ? [
              { name: 'public', subnetType: SubnetType.PUBLIC },
              { name: 'workers', subnetType: SubnetType.PRIVATE_WITH_EGRESS },
            ]
          : [{ name: 'public', subnetType: SubnetType.PUBLIC }],
      });
    const subnetType = privateNat ? SubnetType.PRIVATE_WITH_EGRESS : SubnetType.PUBLIC;
    this.cluster = new Cluster(this, 'Cluster', { vpc: this.vpc, containerInsightsV2: ContainerInsights.ENABLED });

    this.taskDefinition = new FargateTaskDefinition(this, 'Task', {
      cpu: settings.cpu,
      memoryLimitMiB: settings.memoryMiB,
      // The RocksDB binding has no arm64 Linux prebuild.
      runtimePlatform: { cpuArchitecture: CpuArchitecture.X86_64, operatingSystemFamily: OperatingSystemFamily.LINUX },
    });
    const taskRole = this.taskDefinition.taskRole;
    taskRole.addToPrincipalPolicy(tableReadWrite(storage.controlTable));
    taskRole.addToPrincipalPolicy(tableRead(storage.commitTable));
    for (const statement of checkpointObjects(storage.bucket, settings.jobId)) taskRole.addToPrincipalPolicy(statement);
    const source = storage.sourceStream.streamArn;
    taskRole.addToPrincipalPolicy(new PolicyStatement({ actions: SOURCE_READ_ACTIONS, resources: [source] }));
    taskRole.addToPrincipalPolicy(new PolicyStatement({ actions: FAN_OUT_ACTIONS, resources: [source, `${source}/consumer/*`] }));
    if (storage.exchangeStream !== undefined) {
      taskRole.addToPrincipalPolicy(
        new PolicyStatement({ actions: [...SOURCE_READ_ACTIONS, 'kinesis:PutRecords'], resources: [storage.exchangeStream.streamArn] }),
      );
    }
    // Kinesis server-side encryption with the AWS managed key needs no KMS grant.

    this.logGroup = new LogGroup(this, 'Logs', { retention: RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY });
    const environment: Record<string, string> = {
      SLUICE_JOB_ID: settings.jobId,
      SLUICE_CONTROL_TABLE: storage.controlTable.tableName,
      SLUICE_CHECKPOINT_DIR: storage.checkpointDir,
      SLUICE_STATE_DIR: STATE_DIR,
      AWS_REGION: Stack.of(this).region,
    };
    if (storage.exchangeStream !== undefined) environment['SLUICE_EXCHANGE_STREAM'] = storage.exchangeStream.streamName;
    const container = this.taskDefinition.addContainer('worker', {
      image: settings.workerImage ?? workerImageAsset(settings.jobModule),
      // The image's entrypoint is `sluice worker <the bundled job>`; the job's flags follow.
      ...(settings.jobFlags.length === 0 ? {} : { command: [...settings.jobFlags] }),
      environment,
      logging: new AwsLogDriver({ logGroup: this.logGroup, streamPrefix: 'worker' }),
      stopTimeout: Duration.seconds(WORKER_STOP_TIMEOUT_SECONDS),
      essential: true,
    });

    this.service = new FargateService(this, 'Service', {
      cluster: this.cluster,
      taskDefinition: this.taskDefinition,
      desiredCount: settings.workers,
      assignPublicIp: !privateNat,
      vpcSubnets: { subnetType },
      circuitBreaker: { enable: true, rollback: true },
      // Workers hand slots over through leases: a rolling replacement keeps every slot owned.
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
    });

    if (settings.stateStorage === 'efs') {
      this.fileSystem = new FileSystem(this, 'State', {
        vpc: this.vpc,
        vpcSubnets: { subnetType },
        encrypted: true,
        throughputMode: ThroughputMode.ELASTIC,
        performanceMode: PerformanceMode.GENERAL_PURPOSE,
        allowAnonymousAccess: false,
        removalPolicy: settings.removalPolicy,
      });
      this.accessPoint = this.fileSystem.addAccessPoint('StateAccess', {
        path: '/sluice',
        posixUser: { uid: WORKER_UID, gid: WORKER_UID },
        createAcl: { ownerUid: WORKER_UID, ownerGid: WORKER_UID, permissions: '750' },
      });
      this.taskDefinition.addVolume({
        name: 'state',
        efsVolumeConfiguration: {
          fileSystemId: this.fileSystem.fileSystemId,
          transitEncryption: 'ENABLED',
          authorizationConfig: { accessPointId: this.accessPoint.accessPointId, iam: 'ENABLED' },
        },
      });
      container.addMountPoints({ sourceVolume: 'state', containerPath: STATE_DIR, readOnly: false });
      // Only through the access point (its fixed uid), only over a mount target.
      taskRole.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['elasticfilesystem:ClientMount', 'elasticfilesystem:ClientWrite'],
          resources: [this.fileSystem.fileSystemArn],
          conditions: {
            StringEquals: { 'elasticfilesystem:AccessPointArn': this.accessPoint.accessPointArn },
            Bool: { 'elasticfilesystem:AccessedViaMountTarget': 'true' },
          },
        }),
      );
      this.fileSystem.connections.allowDefaultPortFrom(this.service);
    }
  }
}
