import { S3Client } from '@aws-sdk/client-s3';
import { awsClientConfig, configuredEndpoint, type AwsClientOverrides } from '../client-config.ts';

/**
 * An S3 client with the shared AWS settings. Path-style addressing defaults to on whenever an endpoint is configured
 * (option or AWS_ENDPOINT_URL[_S3]): emulators have no per-bucket host names.
 */
export function createS3Client(aws: AwsClientOverrides | undefined, forcePathStyle: boolean | undefined): S3Client {
  const pathStyle = forcePathStyle ?? (aws?.endpoint !== undefined || configuredEndpoint('s3') !== undefined);
  return new S3Client({ ...awsClientConfig('s3', aws), forcePathStyle: pathStyle });
}
