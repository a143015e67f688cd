import { Stack, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';

/** A cdk-nag AwsSolutions finding the job accepts on one construct (and what it contains), and why. */
export interface AcceptedFinding {
  readonly scope: IConstruct;
  readonly id: string;
  readonly reason: string;
}

/**
 * The finding id cdk-nag gives a wildcard resource (IAM5), e.g. `AwsSolutions-IAM5[Resource::<Bucket.Arn>/job/*]`:
 * acknowledging that id accepts exactly that resource pattern, not IAM5 as a whole.
 */
export function wildcardResourceFinding(scope: IConstruct, resource: string): string {
  return `AwsSolutions-IAM5[Resource::${flattenCfnReference(Stack.of(scope).resolve(resource))}]`;
}

/** Acknowledges each finding on its construct (cdk-nag 3 reads CDK's Validations acknowledgments). */
export function acknowledgeFindings(findings: readonly AcceptedFinding[]): void {
  for (const { scope, id, reason } of findings) Validations.of(scope).acknowledge({ id, reason });
}
