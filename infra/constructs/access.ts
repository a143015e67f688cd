import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IBucket } from 'aws-cdk-lib/aws-s3';

/**
 * The exact IAM actions the runtime's AWS calls need (the SDK commands in lib/connectors/aws and functions/).
 * TransactWriteItems has no action of its own: each item in it is authorized as its Put/Update/Delete/ConditionCheck.
 */
export const TABLE_READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:Query'] as const;
export const TABLE_WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:ConditionCheckItem',
  'dynamodb:BatchWriteItem',
] as const;
export const OBJECT_ACTIONS = ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'] as const;

export function tableReadWrite(...tables: readonly ITable[]): PolicyStatement {
  return new PolicyStatement({
    effect: Effect.ALLOW,
    actions: [...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS],
    resources: tables.map((t) => t.tableArn),
  });
}

export function tableRead(...tables: readonly ITable[]): PolicyStatement {
  return new PolicyStatement({ effect: Effect.ALLOW, actions: [...TABLE_READ_ACTIONS], resources: tables.map((t) => t.tableArn) });
}

/** Objects and listings under the job's prefix only: one bucket may serve several jobs. */
export function checkpointObjects(bucket: IBucket, prefix: string): PolicyStatement[] {
  return [
    new PolicyStatement({ effect: Effect.ALLOW, actions: [...OBJECT_ACTIONS], resources: [bucket.arnForObjects(`${prefix}/*`)] }),
    new PolicyStatement({
      effect: Effect.ALLOW,
      actions: ['s3:ListBucket'],
      resources: [bucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': [prefix, `${prefix}/*`] } },
    }),
  ];
}
