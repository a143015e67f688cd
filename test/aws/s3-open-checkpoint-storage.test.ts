import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/core/index.ts';
import { openCheckpointStorage, openS3CheckpointStorage } from '../../lib/connectors/aws/s3/open-s3-checkpoint-storage.ts';
import { parseS3Uri } from '../../lib/connectors/aws/s3/s3-location.ts';

const aws = { region: 'us-east-1', endpoint: 'http://127.0.0.1:1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } };

describe('s3:// checkpoint locations', () => {
  it('parses bucket, prefix and parameters', () => {
    expect(parseS3Uri('s3://my-bucket/jobs/orders/')).toEqual({ bucket: 'my-bucket', prefix: 'jobs/orders', params: new Map() });
    expect(parseS3Uri('s3://my.bucket')).toMatchObject({ bucket: 'my.bucket', prefix: '' });
    expect(parseS3Uri('s3://b12/a%20b?commitTable=t1')).toEqual({ bucket: 'b12', prefix: 'a b', params: new Map([['commitTable', 't1']]) });
  });

  it.each([
    ['s3:/bucket/x', /not an S3 location/],
    ['s3://', /not a valid S3 bucket name/],
    ['s3://Bad_Bucket/x', /not a valid S3 bucket name/],
    ['s3://bucket/a//b', /empty, '.' or '..' segment/],
    ['s3://bucket/a/../b', /'\.\.' segment/],
    ['s3://bucket/%E0%A4%A', /percent-encoding/],
    ['s3://bucket/x?commitTable=a&commitTable=b', /given twice/],
  ])('refuses %s with a ConfigError', (uri, message) => {
    expect(() => parseS3Uri(uri)).toThrow(ConfigError);
    expect(() => parseS3Uri(uri)).toThrow(message);
  });

  it('takes the commit table and mode from options, then the URI, then the environment', () => {
    const env = { SLUICE_CHECKPOINT_COMMIT_TABLE: 'from-env' };
    expect(openS3CheckpointStorage('s3://bucket/p', { aws, env }).location).toBe('s3://bucket/p');
    expect(openS3CheckpointStorage('s3://bucket/p?commitTable=from-uri', { aws, env: {} }).commitMode).toBe('dynamodb');
    const conditional = openCheckpointStorage('s3://bucket/p?commitMode=s3-conditional', { aws, env: {} });
    expect(conditional.commitMode).toBe('s3-conditional');
    expect(openS3CheckpointStorage('s3://bucket/p', { aws, env: { SLUICE_CHECKPOINT_COMMIT_MODE: 's3-conditional' } }).commitMode).toBe('s3-conditional');
    expect(openS3CheckpointStorage('s3://bucket/p?commitMode=s3-conditional', { aws, env: {}, commitMode: 'dynamodb', commitTable: 'opt' }).commitMode).toBe('dynamodb');
  });

  it('refuses a missing commit table, unknown parameters and bad options', () => {
    expect(() => openS3CheckpointStorage('s3://bucket/p', { aws, env: {} })).toThrow(/needs a commit table/);
    expect(() => openS3CheckpointStorage('s3://bucket/p?table=x', { aws, env: {} })).toThrow(/unknown parameter "table"/);
    expect(() => openS3CheckpointStorage('s3://bucket/p?commitMode=fast', { aws, env: {} })).toThrow(ConfigError);
    expect(() => openS3CheckpointStorage('s3://bucket/p?commitTable=tbl', { aws, env: {}, partSizeBytes: 1024 })).toThrow(/partSizeBytes/);
    expect(() => openS3CheckpointStorage('s3://bucket/p?commitTable=x', { aws, env: {} })).toThrow(/not a valid DynamoDB table name/);
    expect(() => openS3CheckpointStorage('file:///tmp/x', { aws, env: {} })).toThrow(ConfigError);
  });
});
