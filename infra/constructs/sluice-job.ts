import { Aws, CfnOutput } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { JobControl } from './job-control.ts';
import { JobCoordinator } from './job-coordinator.ts';
import { JobMonitoring } from './job-monitoring.ts';
import { JobStorage } from './job-storage.ts';
import { JobWorkers } from './job-workers.ts';
import { acceptedFindings } from './accepted-findings.ts';
import { type AcceptedFinding, acknowledgeFindings } from './nag-suppressions.ts';
import { compileSluiceJobProps, type SluiceJobProps, type SluiceJobSettings } from './sluice-job-props.ts';

export type { SluiceJobProps } from './sluice-job-props.ts';

/**
 * A Sluice cluster job on AWS: checkpoint bucket, control and commit tables, source (and exchange) stream, the
 * Step Functions coordinator with its handlers, the Fargate slot workers with their EFS state directory (unless
 * `workersMode: 'external'`), a dashboard and alarms. The job itself is deployed into the control table by
 * `sluice aws init` (the `InitCommand` output); workers and coordinator wait for it.
 */
export class SluiceJob extends Construct {
  readonly settings: SluiceJobSettings;
  readonly storage: JobStorage;
  readonly coordinator: JobCoordinator;
  readonly control: JobControl;
  readonly workers: JobWorkers | undefined;
  readonly monitoring: JobMonitoring;
  /** The cdk-nag findings acknowledged, each with its reason. */
  readonly acceptedFindings: readonly AcceptedFinding[];

  constructor(scope: Construct, id: string, props: SluiceJobProps) {
    super(scope, id);
    this.settings = compileSluiceJobProps(props);
    const settings = this.settings;
    this.storage = new JobStorage(this, 'Storage', settings);
    this.coordinator = new JobCoordinator(this, 'Coordinator', settings, this.storage);
    this.control = new JobControl(this, 'Control', settings, this.storage, this.coordinator);
    this.workers = settings.workersMode === 'fargate' ? new JobWorkers(this, 'Workers', settings, this.storage) : undefined;
    this.monitoring = new JobMonitoring(this, 'Monitoring', {
      settings,
      coordinatorLogs: this.coordinator.logGroup,
      workerLogs: this.workers?.logGroup,
      sourceStream: this.storage.sourceStream,
      supervisor: this.coordinator.supervisor,
      cycles: this.coordinator.cycles,
    });
    this.acceptedFindings = acceptedFindings({ job: this, jobId: settings.jobId, storage: this.storage, coordinator: this.coordinator, workers: this.workers });
    acknowledgeFindings(this.acceptedFindings);

    const table = this.storage.controlTable.tableName;
    const out = (name: string, value: string, description: string): void => {
      new CfnOutput(this, name, { value, description });
    };
    out('CheckpointBucket', this.storage.bucket.bucketName, 'S3 bucket of checkpoints and savepoints');
    out('CheckpointDir', this.storage.checkpointDir, '--checkpoint-dir of sluice aws init and the workers');
    out('ControlTable', table, 'DynamoDB control table (leases, acks, coordinator state)');
    out('CommitTable', this.storage.commitTable.tableName, 'DynamoDB commit table of the checkpoint storage');
    out('SourceStreamArn', this.storage.sourceStream.streamArn, 'Kinesis source stream');
    if (this.storage.exchangeStream !== undefined) out('ExchangeStream', this.storage.exchangeStream.streamName, 'internal exchange stream');
    out('SupervisorStateMachineArn', this.coordinator.supervisor.stateMachineArn, 'coordinator supervisor (Standard)');
    out('CyclesStateMachineArn', this.coordinator.cycles.stateMachineArn, 'coordinator cycles (Express)');
    out(
      'ControlStateMachineArn',
      this.control.stateMachine.stateMachineArn,
      'start an execution with {"command": "status" | "savepoint" | "stop" | "resume"} to manage the job from the console',
    );
    out(
      'DashboardUrl',
      `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards:name=${this.monitoring.dashboard.dashboardName}`,
      'CloudWatch dashboard',
    );
    const flags = settings.jobFlags.length === 0 ? '' : ` ${settings.jobFlags.join(' ')}`;
    const exchange = this.storage.exchangeStream === undefined ? '' : ` --exchange-stream ${this.storage.exchangeStream.streamName}`;
    out(
      'InitCommand',
      `npx sluice aws init ${settings.jobModule} --job-id ${settings.jobId} --control-table ${table} --checkpoint-dir '${this.storage.checkpointDir}' --parallelism ${settings.parallelism} --checkpoint-interval-ms ${settings.checkpointIntervalMs}${exchange}${flags}`,
      'deploys the job into the control table (run once; workers and coordinator wait for it)',
    );
    out('StatusCommand', `npx sluice aws status --job-id ${settings.jobId} --control-table ${table}`, 'shows the job');
  }
}
