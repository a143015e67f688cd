/**
 * us-east-1 list prices (on-demand, no free tier, no Savings Plans) that the cost model multiplies by. Each price
 * names the page it was read from and that page's date (or, where the page carries none, the day it was read: the
 * AWS pricing pages render their tables from price tokens, so a number is taken from a dated page that quotes it).
 * Re-check them before quoting a total: prices change.
 */

export interface Price {
  /** US dollars per `unit`. */
  readonly usd: number;
  readonly unit: string;
  /** The page the number was read from. */
  readonly source: string;
  /** The page's date, or the day it was read (YYYY-MM-DD, or YYYY-MM when the page gives only a month). */
  readonly dated: string;
}

export interface AwsPrices {
  readonly fargateVcpuHour: Price;
  readonly fargateGbHour: Price;
  readonly kinesisShardHour: Price;
  readonly kinesisPutPayloadUnit: Price;
  readonly kinesisOnDemandStreamHour: Price;
  readonly kinesisOnDemandGbIn: Price;
  readonly kinesisOnDemandGbOut: Price;
  readonly dynamodbWriteRequestUnit: Price;
  readonly dynamodbReadRequestUnit: Price;
  readonly s3ClassARequest: Price;
  readonly s3ClassBRequest: Price;
  readonly s3StorageGbMonth: Price;
  readonly stepFunctionsStandardTransition: Price;
  readonly stepFunctionsExpressRequest: Price;
  readonly stepFunctionsExpressGbSecond: Price;
  readonly lambdaRequest: Price;
  readonly lambdaGbSecond: Price;
  readonly efsElasticReadGb: Price;
  readonly efsElasticWriteGb: Price;
  readonly efsStandardGbMonth: Price;
  readonly cloudwatchMetricMonth: Price;
  readonly cloudwatchAlarmMonth: Price;
  readonly cloudwatchDashboardMonth: Price;
  readonly cloudwatchLogsIngestedGb: Price;
  readonly flinkKpuHour: Price;
  readonly flinkRunningStorageGbMonth: Price;
  readonly flinkBackupGbMonth: Price;
}

const FARGATE = 'https://www.factualminds.com/blog/amazon-fargate-ecs-task-pricing-2026/ (quoting https://aws.amazon.com/fargate/pricing/)';
// The official page renders its tables from price tokens, so its numbers were not in the text read; these are the
// us-east-1 numbers a public pattern catalog quotes "from the AWS price list of September 2026" (Provisioned and
// On-demand Standard), matching the ones AWS samples and cost scripts in public repositories use.
const KINESIS =
  'https://aws.amazon.com/kinesis/data-streams/pricing/ (definitions of the units), numbers as quoted from the AWS ' +
  'price list of September 2026 by a public pattern catalog (not confirmed on the official page)';
const DYNAMODB = 'https://airbyte.com/data-engineering-resources/dynamodb-pricing (after the Nov 2024 on-demand price cut, https://aws.amazon.com/blogs/aws/amazon-dynamodb-on-demand-no-capacity-planning-and-pay-per-request-pricing, updated 2025-01-31)';
const S3 = 'https://c3x.dev/blog/s3-request-fees-explained (quoting https://aws.amazon.com/s3/pricing/)';
const SFN = 'https://www.wring.co/blog/aws-step-functions-pricing-guide and https://aws.amazon.com/blogs/compute/building-cost-effective-aws-step-functions-workflows/';
const LAMBDA = 'https://docs.aws.amazon.com/whitepapers/latest/how-aws-pricing-works/lambda.html';
const EFS = 'https://www.factualminds.com/blog/amazon-efs-pricing-throughput-modes-storage-classes/ (storage also https://aws.amazon.com/efs/pricing/)';
const CLOUDWATCH = 'https://www.factualminds.com/blog/amazon-cloudwatch-pricing-metrics-logs-alarms-dashboards/ and https://signoz.io/guides/cloudwatch-pricing';
const FLINK =
  'https://github.com/aws/agent-toolkit-for-aws (managed-service-for-apache-flink references/pricing-calculator.md) and ' +
  'the transcription of https://aws.amazon.com/managed-service-apache-flink/pricing/ in api-evangelist/kinesis plans';

const READ = '2026-12-02';

export const US_EAST_1_PRICES: AwsPrices = {
  fargateVcpuHour: { usd: 0.04048, unit: 'vCPU-hour (Linux/x86)', source: FARGATE, dated: '2026-06-17' },
  fargateGbHour: { usd: 0.004445, unit: 'GB-hour (Linux/x86)', source: FARGATE, dated: '2026-06-17' },
  kinesisShardHour: { usd: 0.015, unit: 'shard-hour (provisioned)', source: KINESIS, dated: '2026-09' },
  kinesisPutPayloadUnit: { usd: 0.014 / 1e6, unit: 'PUT payload unit (25 KB of a record, provisioned)', source: KINESIS, dated: '2026-09' },
  kinesisOnDemandStreamHour: { usd: 0.04, unit: 'stream-hour (on-demand)', source: KINESIS, dated: '2026-09' },
  kinesisOnDemandGbIn: { usd: 0.08, unit: 'GB written (on-demand; each record rounded up to 1 KB)', source: KINESIS, dated: '2026-09' },
  kinesisOnDemandGbOut: { usd: 0.04, unit: 'GB read (on-demand)', source: KINESIS, dated: '2026-09' },
  dynamodbWriteRequestUnit: { usd: 0.625 / 1e6, unit: 'write request unit (on-demand)', source: DYNAMODB, dated: READ },
  dynamodbReadRequestUnit: { usd: 0.125 / 1e6, unit: 'read request unit (on-demand)', source: DYNAMODB, dated: READ },
  s3ClassARequest: { usd: 0.005 / 1000, unit: 'PUT/COPY/POST/LIST request (S3 Standard)', source: S3, dated: READ },
  s3ClassBRequest: { usd: 0.0004 / 1000, unit: 'GET/HEAD request (S3 Standard)', source: S3, dated: READ },
  s3StorageGbMonth: { usd: 0.023, unit: 'GB-month (S3 Standard, first 50 TB)', source: S3, dated: READ },
  stepFunctionsStandardTransition: { usd: 25 / 1e6, unit: 'state transition (Standard)', source: SFN, dated: '2026-03-14' },
  stepFunctionsExpressRequest: { usd: 1 / 1e6, unit: 'request (Express)', source: SFN, dated: '2026-03-14' },
  stepFunctionsExpressGbSecond: { usd: 0.00001667, unit: 'GB-second (Express, 64 MB chunks, 100 ms)', source: SFN, dated: '2026-03-14' },
  lambdaRequest: { usd: 0.2 / 1e6, unit: 'request', source: LAMBDA, dated: READ },
  lambdaGbSecond: { usd: 0.0000166667, unit: 'GB-second (x86)', source: LAMBDA, dated: READ },
  efsElasticReadGb: { usd: 0.03, unit: 'GB read (Elastic throughput)', source: EFS, dated: '2026-06-13' },
  efsElasticWriteGb: { usd: 0.06, unit: 'GB written (Elastic throughput)', source: EFS, dated: '2026-06-13' },
  efsStandardGbMonth: { usd: 0.3, unit: 'GB-month (Standard, Regional)', source: EFS, dated: '2026-06-13' },
  cloudwatchMetricMonth: { usd: 0.3, unit: 'custom metric-month (first 10,000)', source: CLOUDWATCH, dated: '2026-06-13' },
  cloudwatchAlarmMonth: { usd: 0.1, unit: 'standard-resolution alarm-month', source: CLOUDWATCH, dated: '2026-06-13' },
  cloudwatchDashboardMonth: { usd: 3, unit: 'dashboard-month (beyond the 3 free)', source: CLOUDWATCH, dated: '2026-06-13' },
  cloudwatchLogsIngestedGb: { usd: 0.5, unit: 'GB of logs ingested (Standard class)', source: CLOUDWATCH, dated: '2026-06-13' },
  flinkKpuHour: { usd: 0.11, unit: 'KPU-hour (1 vCPU, 4 GB), also the orchestration KPU', source: FLINK, dated: '2026-09-20' },
  flinkRunningStorageGbMonth: { usd: 0.1, unit: 'GB-month of running application storage (50 GB per KPU)', source: FLINK, dated: '2026-09-20' },
  flinkBackupGbMonth: { usd: 0.023, unit: 'GB-month of durable application backups', source: FLINK, dated: '2026-09-20' },
};
