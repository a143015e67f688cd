import { Duration, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IAlarmAction,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IStream } from 'aws-cdk-lib/aws-kinesis';
import { FilterPattern, type ILogGroup, MetricFilter } from 'aws-cdk-lib/aws-logs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { SluiceJobSettings } from './sluice-job-props.ts';

/** Namespace of the metrics taken from the JSON event logs of the coordinator handlers and the workers. */
export const METRIC_NAMESPACE = 'Sluice';

/** A log event (its `event` field) counted as a metric, per job. */
interface LogCount {
  readonly metricName: string;
  readonly event: string;
}
export const COORDINATOR_LOG_METRICS: readonly LogCount[] = [
  { metricName: 'CheckpointsCompleted', event: 'checkpoint-completed' },
  { metricName: 'CheckpointsAborted', event: 'checkpoint-aborted' },
  { metricName: 'SinksCommitted', event: 'sinks-committed' },
];
export const WORKER_LOG_METRICS: readonly LogCount[] = [
  { metricName: 'SlotRestarts', event: 'slot-failed' },
  { metricName: 'SlotsStarted', event: 'slot-started' },
  { metricName: 'LeasesLost', event: 'lease-lost' },
];

export interface JobMonitoringProps {
  readonly settings: SluiceJobSettings;
  readonly coordinatorLogs: ILogGroup;
  readonly workerLogs: ILogGroup | undefined;
  readonly sourceStream: IStream;
  readonly supervisor: StateMachine;
  readonly cycles: StateMachine;
}

/** Period of the checkpoint alarms: three checkpoint intervals, as CloudWatch periods go (a multiple of 60 s). */
export function threeIntervalsSeconds(checkpointIntervalMs: number): number {
  return Math.max(60, Math.ceil((3 * checkpointIntervalMs) / 60_000) * 60);
}

/** The job's dashboard and alarms. */
export class JobMonitoring extends Construct {
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: JobMonitoringProps) {
    super(scope, id);
    const { settings } = props;
    const dimensionsMap = { JobId: settings.jobId };
    const countFrom = (group: ILogGroup, metric: LogCount): Metric => {
      new MetricFilter(this, `${metric.metricName}Filter`, {
        logGroup: group,
        metricNamespace: METRIC_NAMESPACE,
        metricName: metric.metricName,
        filterPattern: FilterPattern.all(FilterPattern.stringValue('$.event', '=', metric.event), FilterPattern.stringValue('$.jobId', '=', settings.jobId)),
        metricValue: '1',
        dimensions: { JobId: '$.jobId' },
      });
      return new Metric({ namespace: METRIC_NAMESPACE, metricName: metric.metricName, dimensionsMap, statistic: 'Sum' });
    };
    const counts = new Map<string, Metric>();
    for (const m of COORDINATOR_LOG_METRICS) counts.set(m.metricName, countFrom(props.coordinatorLogs, m));
    if (props.workerLogs !== undefined) for (const m of WORKER_LOG_METRICS) counts.set(m.metricName, countFrom(props.workerLogs, m));
    const count = (name: string, period?: Duration): Metric | undefined => counts.get(name)?.with(period === undefined ? {} : { period });

    const action: IAlarmAction | undefined = settings.alarmTopic === undefined ? undefined : new SnsAction(settings.alarmTopic);
    const alarm = (a: Alarm): void => {
      if (action !== undefined) a.addAlarmAction(action);
      this.alarms.push(a);
    };
    const window = Duration.seconds(threeIntervalsSeconds(settings.checkpointIntervalMs));
    const completed = count('CheckpointsCompleted', window) as Metric;
    const aborted = count('CheckpointsAborted', window) as Metric;
    alarm(
      new Alarm(this, 'NoCheckpoint', {
        alarmDescription: `${settings.jobId}: no checkpoint completed in 3 checkpoint intervals`,
        metric: completed,
        threshold: 1,
        comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: 1,
        // No log line at all means no checkpoint either.
        treatMissingData: TreatMissingData.BREACHING,
      }),
    );
    alarm(
      new Alarm(this, 'AbortsInARow', {
        alarmDescription: `${settings.jobId}: 3 or more checkpoints aborted and none completed in 3 checkpoint intervals`,
        metric: new MathExpression({
          expression: 'IF(aborted >= 3 AND FILL(completed, 0) == 0, 1, 0)',
          usingMetrics: { aborted, completed },
          period: window,
        }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    const iteratorAge = props.sourceStream.metricGetRecordsIteratorAgeMilliseconds({ statistic: 'Maximum', period: Duration.minutes(1) });
    alarm(
      new Alarm(this, 'IteratorAge', {
        alarmDescription: `${settings.jobId}: the workers fall behind the source stream by more than ${settings.iteratorAgeAlarmMs} ms`,
        metric: iteratorAge,
        threshold: settings.iteratorAgeAlarmMs,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    for (const [name, machine] of [['Supervisor', props.supervisor], ['Cycles', props.cycles]] as const) {
      alarm(
        new Alarm(this, `${name}ExecutionsFailed`, {
          alarmDescription: `${settings.jobId}: a ${name.toLowerCase()} execution failed, timed out or was aborted`,
          metric: new MathExpression({
            expression: 'FILL(failed, 0) + FILL(timedOut, 0) + FILL(aborted, 0)',
            usingMetrics: {
              failed: machine.metricFailed({ period: Duration.minutes(5) }),
              timedOut: machine.metricTimedOut({ period: Duration.minutes(5) }),
              aborted: machine.metricAborted({ period: Duration.minutes(5) }),
            },
            period: Duration.minutes(5),
          }),
          threshold: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }
    const restarts = count('SlotRestarts', Duration.minutes(5));
    if (restarts !== undefined) {
      // A slot failing again and again (its restart back-off tops out at 30 s): several restarts in each of 3 periods.
      alarm(
        new Alarm(this, 'SlotRestartLoop', {
          alarmDescription: `${settings.jobId}: slots keep failing and restarting (3 or more restarts in each of 3 periods of 5 minutes)`,
          metric: restarts,
          threshold: 3,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 3,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }

    const minute = Duration.minutes(1);
    const incoming = props.sourceStream.metricIncomingRecords({ statistic: 'Sum', period: minute });
    const records = new MathExpression({ expression: 'incoming / PERIOD(incoming)', usingMetrics: { incoming }, label: 'source records/s', period: minute });
    this.dashboard = new Dashboard(this, 'Dashboard', { dashboardName: `sluice-${settings.jobId}-${Stack.of(this).region}`.slice(0, 255) });
    const workerCounts = ['SlotRestarts', 'SlotsStarted', 'LeasesLost'].flatMap((n) => count(n, minute) ?? []);
    this.dashboard.addWidgets(
      new GraphWidget({ title: 'Records/s (source stream)', left: [records], width: 8 }),
      new GraphWidget({ title: 'Iterator age (ms, max)', left: [iteratorAge], width: 8 }),
      new GraphWidget({
        title: 'Checkpoints',
        left: ['CheckpointsCompleted', 'CheckpointsAborted', 'SinksCommitted'].flatMap((n) => count(n, minute) ?? []),
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({ title: 'Slots (restarts, starts, leases lost)', left: workerCounts, width: 8 }),
      new GraphWidget({
        title: 'Supervisor executions',
        left: [props.supervisor.metricStarted(), props.supervisor.metricSucceeded(), props.supervisor.metricFailed()],
        width: 8,
      }),
      new GraphWidget({
        title: 'Cycles executions',
        left: [props.cycles.metricStarted(), props.cycles.metricSucceeded(), props.cycles.metricFailed(), props.cycles.metricTimedOut()],
        width: 8,
      }),
    );
  }
}
