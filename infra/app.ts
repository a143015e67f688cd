import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ConfigError } from '../lib/core/errors.ts';
import { jobPropsFromContext } from './app-context.ts';
import { SluiceJobStack } from './sluice-job-stack.ts';

/**
 * The CDK app (`cdk.json`: `npx tsx infra/app.ts`): one SluiceJobStack from the context, e.g.
 * `npx cdk deploy -c job=examples/kinesis-to-dynamodb.ts -c parallelism=4 -c workers=2`. cdk-nag's AwsSolutions
 * checks run on every synth (cdk-nag 3: a policy validation plugin); an unacknowledged finding fails it.
 * Invalid context exits 2 with the message (which names the context key and how to fix it).
 */
function main(): void {
  const app = new App();
  const job = jobPropsFromContext((name) => app.node.tryGetContext(name));
  const defaultName = `sluice-${job.jobId ?? (job.jobModule.split('/').pop() ?? 'job').replace(/\.[cm]?[jt]s$/, '')}`;
  const stackName = (app.node.tryGetContext('stackName') as string | undefined) ?? defaultName;
  new SluiceJobStack(app, stackName, {
    job,
    env: { account: process.env['CDK_DEFAULT_ACCOUNT'], region: process.env['CDK_DEFAULT_REGION'] },
    description: `Sluice cluster job ${job.jobModule}`,
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  app.synth();
}

try {
  main();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`sluice cdk app: ${error.message}`);
  process.exitCode = 2;
}
