// The `./aws` entry point: every AWS connector. The only modules that import the AWS SDK (ARCHITECTURE.md rule 3),
// kept out of the main entry so local jobs never load it.
export { awsClientConfig, configuredEndpoint } from './client-config.ts';
export type { AwsClientConfig, AwsClientOverrides, AwsCredentials, AwsService } from './client-config.ts';
export { deadLetterJson } from './dead-letter.ts';
export type { DeadLetter, DeadLetterWriter } from './dead-letter.ts';
export * from './kinesis/index.ts';
export * from './s3/index.ts';
export * from './dynamodb/index.ts';
