import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { KinesisClientConfig } from '@aws-sdk/client-kinesis';

/** The AWS services Sluice's connectors talk to. */
export type AwsService = 'kinesis' | 's3' | 'dynamodb';

/** Static credentials or a provider, as every SDK v3 client accepts them. */
export type AwsCredentials = NonNullable<KinesisClientConfig['credentials']>;

/**
 * Settings that replace what the SDK would otherwise find itself. Leave them out in production: region and
 * credentials then come from the default chain (environment, profile, container or instance role) and the endpoint
 * from `AWS_ENDPOINT_URL_<SERVICE>` / `AWS_ENDPOINT_URL` / the profile's `endpoint_url`, exactly as the SDK reads them.
 */
export interface AwsClientOverrides {
  readonly region?: string;
  /** E.g. `http://127.0.0.1:4567` for an emulator. */
  readonly endpoint?: string;
  readonly credentials?: AwsCredentials;
  /**
   * Use the HTTP/1.1 handler with keep-alive agents. Emulators (kinesalite, dynalite, s3rver, LocalStack) speak
   * only HTTP/1.1, while the Kinesis client defaults to HTTP/2 (which SubscribeToShard needs on AWS).
   * @default true, except for Kinesis without a configured endpoint (then the SDK's HTTP/2 handler)
   */
  readonly http1?: boolean;
  /** Sockets per host of the HTTP/1.1 agents. @default 50 */
  readonly maxSockets?: number;
  /** Milliseconds before a request without a response is abandoned (the SDK retries it). @default SDK default */
  readonly requestTimeoutMs?: number;
  /** Attempts per call including the first, for the SDK's own retries. @default SDK default (3) */
  readonly maxAttempts?: number;
}

/** What `awsClientConfig` returns: spread it into `new KinesisClient(...)`, `new S3Client(...)`, `new DynamoDBClient(...)`. */
export interface AwsClientConfig {
  region?: string;
  endpoint?: string;
  credentials?: AwsCredentials;
  requestHandler?: NodeHttpHandler;
  maxAttempts?: number;
}

/** The per-service environment variable the SDK derives from the service id ("Kinesis", "S3", "DynamoDB"). */
const SERVICE_ENDPOINT_ENV: Readonly<Record<AwsService, string>> = {
  kinesis: 'AWS_ENDPOINT_URL_KINESIS',
  s3: 'AWS_ENDPOINT_URL_S3',
  dynamodb: 'AWS_ENDPOINT_URL_DYNAMODB',
};

/**
 * The endpoint configured through the environment for `service` (per-service variable first, then
 * `AWS_ENDPOINT_URL`), or undefined for the service's AWS endpoint. The SDK reads the same variables itself; this
 * only tells whether an emulator-style endpoint is in use.
 */
export function configuredEndpoint(service: AwsService, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[SERVICE_ENDPOINT_ENV[service]] || env['AWS_ENDPOINT_URL'];
  return value === undefined || value === '' ? undefined : value;
}

/**
 * Client settings shared by every AWS connector. Only overrides are set explicitly; the SDK resolves the rest
 * (region, credentials, endpoint) from its default chains, so the same code runs against AWS, LocalStack and the
 * npm emulators.
 */
export function awsClientConfig(service: AwsService, overrides: AwsClientOverrides = {}): AwsClientConfig {
  const config: AwsClientConfig = {};
  if (overrides.region !== undefined) config.region = overrides.region;
  if (overrides.endpoint !== undefined) config.endpoint = overrides.endpoint;
  if (overrides.credentials !== undefined) config.credentials = overrides.credentials;
  if (overrides.maxAttempts !== undefined) config.maxAttempts = overrides.maxAttempts;
  const endpointConfigured = overrides.endpoint !== undefined || configuredEndpoint(service) !== undefined;
  const http1 = overrides.http1 ?? (service !== 'kinesis' || endpointConfigured);
  if (http1) {
    const agentOptions = { keepAlive: true, maxSockets: overrides.maxSockets ?? 50 };
    config.requestHandler = new NodeHttpHandler({
      httpAgent: new HttpAgent(agentOptions),
      httpsAgent: new HttpsAgent(agentOptions),
      ...(overrides.requestTimeoutMs === undefined ? {} : { requestTimeout: overrides.requestTimeoutMs }),
    });
  }
  return config;
}
