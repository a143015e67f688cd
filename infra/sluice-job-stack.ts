import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { SluiceJob, type SluiceJobProps } from './constructs/sluice-job.ts';

export interface SluiceJobStackProps extends StackProps {
  readonly job: SluiceJobProps;
}

/** One Sluice job per stack: `cdk deploy` creates it, `cdk destroy` removes it (data kept as removalPolicy says). */
export class SluiceJobStack extends Stack {
  readonly job: SluiceJob;

  constructor(scope: Construct, id: string, props: SluiceJobStackProps) {
    super(scope, id, props);
    this.job = new SluiceJob(this, 'Job', props.job);
  }
}
