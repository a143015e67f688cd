import { describe, expect, it } from 'vitest';
import {
  createHandler,
  type CustomResourceEvent,
  type CustomResourceResponse,
  executionName,
  type SupervisorControl,
} from '../../functions/deploy/supervisor-resource.ts';

const ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:job-supervisor';
const OTHER = 'arn:aws:states:us-east-1:123456789012:stateMachine:job2-supervisor';

/** Step Functions as the handler sees it: Standard executions by name (a repeated start returns the same one). */
class FakeStepFunctions implements SupervisorControl {
  readonly executions: { arn: string; machine: string; running: boolean }[] = [];
  starts = 0;
  failStart: Error | undefined;

  start(machine: string, name: string): Promise<string> {
    this.starts++;
    if (this.failStart !== undefined) return Promise.reject(this.failStart);
    const arn = `${machine.replace(':stateMachine:', ':execution:')}:${name}`;
    if (!this.executions.some((e) => e.arn === arn)) this.executions.push({ arn, machine, running: true });
    return Promise.resolve(arn);
  }
  running(machine: string): Promise<string[]> {
    // As ListExecutions: anything but a state machine ARN is a ValidationException.
    if (!machine.startsWith('arn:aws:states:')) return Promise.reject(new Error(`ValidationException: Invalid Arn: '${machine}'`));
    return Promise.resolve(this.executions.filter((e) => e.machine === machine && e.running).map((e) => e.arn));
  }
  stop(arn: string): Promise<void> {
    const e = this.executions.find((x) => x.arn === arn);
    if (e !== undefined) e.running = false;
    return Promise.resolve();
  }
  /** What continue-as-new does: the execution the resource started ends, another runs on. */
  continueAsNew(from: string, name: string): void {
    const e = this.executions.find((x) => x.arn === from);
    if (e === undefined) throw new TypeError(`no execution ${from}`);
    e.running = false;
    this.executions.push({ arn: `${from.split(':').slice(0, -1).join(':')}:${name}`, machine: e.machine, running: true });
  }
}

function setup() {
  const sfn = new FakeStepFunctions();
  const responses: { url: string; body: CustomResourceResponse }[] = [];
  const handler = createHandler({
    control: sfn,
    respond: (url, body) => {
      responses.push({ url, body });
      return Promise.resolve();
    },
    log: () => {},
  });
  return { sfn, responses, handler };
}

const event = (RequestType: CustomResourceEvent['RequestType'], extra: Partial<CustomResourceEvent> = {}): CustomResourceEvent => ({
  RequestType,
  ResponseURL: 'https://cloudformation-responses.example/put',
  StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/job/1',
  RequestId: 'req-1',
  LogicalResourceId: 'SupervisorRunning',
  ResourceProperties: { SupervisorArn: ARN },
  ...extra,
});

describe('supervisor custom resource', () => {
  it('Create starts one supervisor execution, named after the request, and answers SUCCESS with its physical id', async () => {
    const { sfn, responses, handler } = setup();
    await handler(event('Create'));
    await handler(event('Create')); // CloudFormation's retry of the same request
    expect(sfn.executions).toEqual([{ arn: `${ARN.replace(':stateMachine:', ':execution:')}:${executionName('req-1')}`, machine: ARN, running: true }]);
    expect(responses).toHaveLength(2);
    expect(responses[0]?.url).toBe('https://cloudformation-responses.example/put');
    expect(responses[0]?.body).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: `sluice-supervisor:${ARN}`, RequestId: 'req-1', LogicalResourceId: 'SupervisorRunning' });
  });

  it('Delete stops every running execution of the supervisor, also those it continued as', async () => {
    const { sfn, responses, handler } = setup();
    await handler(event('Create'));
    const first = sfn.executions[0]?.arn as string;
    sfn.continueAsNew(first, 'continued-1');
    await sfn.start(OTHER, 'another-job');
    await handler(event('Delete', { RequestId: 'req-2', PhysicalResourceId: `sluice-supervisor:${ARN}` }));
    expect(sfn.executions.filter((e) => e.running).map((e) => e.machine)).toEqual([OTHER]);
    expect(responses[1]?.body).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: `sluice-supervisor:${ARN}`, Data: { Stopped: '1' } });
  });

  it('Delete after a failed Create (no physical id of ours) stops nothing and succeeds', async () => {
    const { sfn, responses, handler } = setup();
    await sfn.start(ARN, 'someone-elses');
    await handler(event('Delete', { PhysicalResourceId: 'sluice-supervisor:none' }));
    expect(sfn.executions.every((e) => e.running)).toBe(true);
    expect(responses[0]?.body.Status).toBe('SUCCESS');
  });

  it('Update keeps a running supervisor, starts one when none runs, and moves to a replaced state machine', async () => {
    const { sfn, responses, handler } = setup();
    await handler(event('Create'));
    await handler(event('Update', { RequestId: 'req-2', PhysicalResourceId: `sluice-supervisor:${ARN}` }));
    expect(sfn.starts).toBe(1);
    await sfn.stop(sfn.executions[0]?.arn as string);
    await handler(event('Update', { RequestId: 'req-3', PhysicalResourceId: `sluice-supervisor:${ARN}` }));
    expect(sfn.starts).toBe(2);
    await handler(event('Update', { RequestId: 'req-4', PhysicalResourceId: `sluice-supervisor:${ARN}`, ResourceProperties: { SupervisorArn: OTHER } }));
    expect(await sfn.running(OTHER)).toHaveLength(1);
    // A new physical id: CloudFormation then deletes the old one, which stops the old machine's executions.
    expect(responses[3]?.body.PhysicalResourceId).toBe(`sluice-supervisor:${OTHER}`);
  });

  it('answers FAILED with the reason when Step Functions refuses, so CloudFormation does not wait an hour', async () => {
    const { sfn, responses, handler } = setup();
    sfn.failStart = new Error('AccessDeniedException: not authorized to perform states:StartExecution');
    await handler(event('Create'));
    expect(responses[0]?.body).toMatchObject({ Status: 'FAILED', PhysicalResourceId: 'sluice-supervisor:none', Reason: expect.stringContaining('AccessDenied') });
    await handler(event('Create', { ResourceProperties: {} }));
    expect(responses[1]?.body).toMatchObject({ Status: 'FAILED', Reason: expect.stringContaining('SupervisorArn') });
  });

  it('names executions within Step Functions limits', () => {
    expect(executionName('5f3c2a9e-1b7d-4c1e-9f00-aaaaaaaaaaaa')).toBe('deploy-5f3c2a9e-1b7d-4c1e-9f00-aaaaaaaaaaaa');
    expect(executionName('x'.repeat(200))).toHaveLength(80);
    expect(executionName('a/b c')).toBe('deploy-a-b-c');
  });
});
