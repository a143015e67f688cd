import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table } from 'aws-cdk-lib/aws-dynamodb';
import { type IStream, Stream, StreamEncryption } from 'aws-cdk-lib/aws-kinesis';
import { BlockPublicAccess, Bucket, BucketEncryption } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { SluiceJobSettings } from './sluice-job-props.ts';

/**
 * Key schemas the runtime expects: the control table of lib/connectors/aws/cluster (`pk`, `sk`) and the commit table
 * of the S3 checkpoint storage (COMMIT_TABLE_PARTITION_KEY, COMMIT_TABLE_SORT_KEY in dynamodb-commit-point.ts;
 * test/infra checks they agree, infra/ does not import the AWS SDK side).
 */
export const CONTROL_TABLE_KEYS = { partition: 'pk', sort: 'sk' } as const;
export const COMMIT_TABLE_KEYS = { partition: 'location', sort: 'checkpointId' } as const;

/** What the job keeps: checkpoints in S3, the control and commit tables, the source and exchange streams. */
export class JobStorage extends Construct {
  readonly bucket: Bucket;
  readonly controlTable: Table;
  readonly commitTable: Table;
  readonly sourceStream: IStream;
  readonly exchangeStream: Stream | undefined;
  /** `s3://bucket/<jobId>?commitTable=…`: the checkpoint dir of workers, coordinator and `sluice aws init`. */
  readonly checkpointDir: string;

  constructor(scope: Construct, id: string, settings: SluiceJobSettings) {
    super(scope, id);
    const removalPolicy = settings.removalPolicy;
    this.bucket = new Bucket(this, 'Checkpoints', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: BucketEncryption.S3_MANAGED,
      // A worker or handler killed mid-upload leaves parts behind that nothing else would ever delete.
      lifecycleRules: [{ id: 'abort-incomplete-multipart-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy,
    });
    const tableProps = {
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy,
    };
    this.controlTable = new Table(this, 'ControlTable', {
      ...tableProps,
      partitionKey: { name: CONTROL_TABLE_KEYS.partition, type: AttributeType.STRING },
      sortKey: { name: CONTROL_TABLE_KEYS.sort, type: AttributeType.STRING },
    });
    this.commitTable = new Table(this, 'CommitTable', {
      ...tableProps,
      partitionKey: { name: COMMIT_TABLE_KEYS.partition, type: AttributeType.STRING },
      sortKey: { name: COMMIT_TABLE_KEYS.sort, type: AttributeType.NUMBER },
    });
    this.sourceStream =
      settings.stream === undefined
        ? new Stream(this, 'SourceStream', { shardCount: settings.parallelism, encryption: StreamEncryption.MANAGED, removalPolicy })
        : Stream.fromStreamArn(this, 'SourceStream', settings.stream);
    // Its records are read-committed copies of in-flight data: nothing to keep once the job is gone.
    this.exchangeStream = settings.exchange
      ? new Stream(this, 'ExchangeStream', { shardCount: settings.parallelism, encryption: StreamEncryption.MANAGED, removalPolicy: RemovalPolicy.DESTROY })
      : undefined;
    this.checkpointDir = `s3://${this.bucket.bucketName}/${settings.jobId}?commitTable=${this.commitTable.tableName}`;
  }
}
