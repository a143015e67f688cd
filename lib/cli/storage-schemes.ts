import { registerStorageScheme } from '../storage/storage-locations.ts';

/**
 * The CLI is a composition root: it chooses the storage for each location scheme. `s3://` is served by the S3
 * connector, registered by URL so that the module (and the AWS SDK) loads only when a job's checkpoints are in S3.
 */
export function registerCliStorageSchemes(): void {
  // The same extension as this module: .ts when run from source, .js once compiled.
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  registerStorageScheme('s3', new URL(`../connectors/aws/s3/open-s3-checkpoint-storage${extension}`, import.meta.url).href);
}
