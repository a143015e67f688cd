// The `./aws` entry point: every AWS connector. The only modules that import the AWS SDK (ARCHITECTURE.md rule 3),
// kept out of the main entry so local jobs never load it.
import { registerStorageScheme } from '../../storage/storage-locations.ts';
import { S3_STORAGE_MODULE_URL } from './s3/open-s3-checkpoint-storage.ts';

export { awsClientConfig, configuredEndpoint } from './client-config.ts';
export type { AwsClientConfig, AwsClientOverrides, AwsCredentials, AwsService } from './client-config.ts';
export { deadLetterJson } from './dead-letter.ts';
export type { DeadLetter, DeadLetterWriter } from './dead-letter.ts';
export * from './kinesis/index.ts';
export * from './s3/index.ts';
export * from './dynamodb/index.ts';

// Importing the AWS connectors makes `s3://` checkpoint and savepoint locations work in jobs run without the CLI.
registerStorageScheme('s3', S3_STORAGE_MODULE_URL);
