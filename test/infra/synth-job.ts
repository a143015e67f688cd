import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { ContainerImage } from 'aws-cdk-lib/aws-ecs';
import type { SluiceJobProps } from '../../infra/constructs/sluice-job.ts';
import { SluiceJobStack } from '../../infra/sluice-job-stack.ts';

export const ENV = { account: '123456789012', region: 'us-east-1' };
/** A worker image that needs no Dockerfile or Docker: for the variants that do not test the image itself. */
export const REGISTRY_IMAGE = ContainerImage.fromRegistry('public.ecr.aws/docker/library/node:24.11.1-bookworm-slim');

export interface SynthesizedJob {
  readonly app: App;
  readonly stack: SluiceJobStack;
  readonly template: Template;
  /** The logical id of a construct's CloudFormation resource. */
  logicalId(construct: { node: { defaultChild?: unknown } }): string;
}

/**
 * One stack variant, synthesized once. Lambda bundling is skipped (`aws:cdk:bundling-stacks`: none): the template
 * is the same, and bundles.test.ts builds and imports the bundles themselves.
 */
export function synthJob(job: Partial<SluiceJobProps> = {}, options: { bundle?: boolean } = {}): SynthesizedJob {
  const app = new App({ context: options.bundle === true ? {} : { 'aws:cdk:bundling-stacks': [] } });
  const stack = new SluiceJobStack(app, 'Test', { env: ENV, job: { jobModule: 'examples/kinesis-to-dynamodb.ts', ...job } });
  const template = Template.fromStack(stack);
  return {
    app,
    stack,
    template,
    logicalId: (construct) => Stack.of(stack).getLogicalId(construct.node.defaultChild as never),
  };
}
