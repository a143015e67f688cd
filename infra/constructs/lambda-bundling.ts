import { join } from 'node:path';
import type { Duration } from 'aws-cdk-lib';
import { Architecture, type IFunction, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import type { IRole } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';

/** The repository root: entries, the lock file and esbuild's working directory. */
export const REPO_ROOT = join(import.meta.dirname, '..', '..');

/** The newest Node.js runtime aws-cdk-lib 2.276 offers (nodejs20.x is deprecated). */
export const HANDLER_RUNTIME = Runtime.NODEJS_24_X;

/**
 * esbuild settings of every handler bundle, shared with test/infra (which builds the same bundles and imports them
 * in a fresh process). ESM like the sources; the banner gives bundled CommonJS dependencies a `require`. The AWS SDK
 * is bundled, not taken from the runtime, so a function runs the SDK versions package-lock.json pins. `keepNames`:
 * Step Functions matches Retry and Catch on the error's name (`ClusterControlError`), which SluiceError takes from
 * its class name, so minifying must keep class names.
 */
export const HANDLER_ESBUILD = {
  format: 'esm',
  target: 'node24',
  platform: 'node',
  minify: true,
  keepNames: true,
  sourcemap: true,
  mainFields: ['module', 'main'],
  banner: "import { createRequire as __sluiceCreateRequire } from 'node:module'; const require = __sluiceCreateRequire(import.meta.url);",
} as const;

const BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  target: HANDLER_ESBUILD.target,
  minify: HANDLER_ESBUILD.minify,
  keepNames: HANDLER_ESBUILD.keepNames,
  sourceMap: HANDLER_ESBUILD.sourcemap,
  mainFields: [...HANDLER_ESBUILD.mainFields],
  banner: HANDLER_ESBUILD.banner,
  externalModules: [],
  // Never fall back to Docker: synth must work offline with the local esbuild.
  forceDockerBundling: false,
};

export interface HandlerFunctionProps {
  /** The handler module, relative to the repository root (exports `handler`). */
  readonly entry: string;
  readonly role: IRole;
  readonly logGroup: ILogGroup;
  readonly environment: Record<string, string>;
  readonly timeout: Duration;
  /** @default 512 */
  readonly memorySize?: number;
}

/** One handler of functions/ as a NodejsFunction bundled by the local esbuild. */
export function handlerFunction(scope: Construct, id: string, props: HandlerFunctionProps): IFunction {
  return new NodejsFunction(scope, id, {
    entry: join(REPO_ROOT, props.entry),
    handler: 'handler',
    runtime: HANDLER_RUNTIME,
    architecture: Architecture.ARM_64,
    projectRoot: REPO_ROOT,
    depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
    bundling: BUNDLING,
    role: props.role,
    logGroup: props.logGroup,
    tracing: Tracing.ACTIVE,
    timeout: props.timeout,
    memorySize: props.memorySize ?? 512,
    environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps' },
  });
}
