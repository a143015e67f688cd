import { request } from 'node:https';
import { ListExecutionsCommand, SFNClient, StartExecutionCommand, StopExecutionCommand } from '@aws-sdk/client-sfn';

/**
 * The CloudFormation custom resource `Custom::SluiceSupervisor`: starts the job's supervisor execution when the
 * stack is created (or the supervisor is replaced) and stops its running executions when the resource is deleted,
 * so no supervisor outlives the tables and functions it uses. CloudFormation invokes this function directly and
 * waits for the answer at the request's presigned ResponseURL.
 */
export interface CustomResourceEvent {
  readonly RequestType: 'Create' | 'Update' | 'Delete';
  readonly ResponseURL: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  readonly PhysicalResourceId?: string;
  readonly ResourceProperties: { readonly SupervisorArn?: string };
  readonly OldResourceProperties?: { readonly SupervisorArn?: string };
}

export interface CustomResourceResponse {
  readonly Status: 'SUCCESS' | 'FAILED';
  readonly Reason?: string;
  readonly PhysicalResourceId: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  readonly Data?: Record<string, string>;
}

/** The Step Functions calls this resource makes. */
export interface SupervisorControl {
  /** Starts an execution named `name` (idempotent for a Standard machine: same name and input). Returns its ARN. */
  start(stateMachineArn: string, name: string): Promise<string>;
  /** ARNs of the machine's running executions (the supervisor continues as new executions, so not only ours). */
  running(stateMachineArn: string): Promise<string[]>;
  stop(executionArn: string, cause: string): Promise<void>;
}

export interface SupervisorResourceDeps {
  readonly control: SupervisorControl;
  readonly respond: (url: string, response: CustomResourceResponse) => Promise<void>;
  readonly log: (event: Record<string, unknown>) => void;
}

const PHYSICAL_PREFIX = 'sluice-supervisor:';

/** A name CloudFormation's retries of one request share, so a retried Create starts nothing twice. */
export function executionName(requestId: string): string {
  return `deploy-${requestId.replace(/[^A-Za-z0-9_-]/g, '-')}`.slice(0, 80);
}

/** The state machine a physical id names; undefined for `sluice-supervisor:none` (a Create that started nothing). */
function supervisorOf(physicalId: string | undefined): string | undefined {
  const arn = physicalId?.startsWith(PHYSICAL_PREFIX) === true ? physicalId.slice(PHYSICAL_PREFIX.length) : undefined;
  return arn?.startsWith('arn:') === true ? arn : undefined;
}

async function stopAll(control: SupervisorControl, stateMachineArn: string, log: SupervisorResourceDeps['log']): Promise<number> {
  const running = await control.running(stateMachineArn);
  for (const execution of running) {
    await control.stop(execution, 'the Sluice job stack deleted or replaced its supervisor');
    log({ event: 'supervisor-stopped', execution });
  }
  return running.length;
}

/**
 * What one request does, as the physical id says: it is `sluice-supervisor:<state machine ARN>`, so an update that
 * replaces the supervisor gets a new id and CloudFormation then deletes the old one (stopping its executions).
 */
async function apply(event: CustomResourceEvent, deps: SupervisorResourceDeps): Promise<{ physicalId: string; data: Record<string, string> }> {
  const { control, log } = deps;
  if (event.RequestType === 'Delete') {
    const arn = supervisorOf(event.PhysicalResourceId);
    // A Create that failed before answering has no such id: nothing was started.
    const stopped = arn === undefined ? 0 : await stopAll(control, arn, log);
    return { physicalId: event.PhysicalResourceId ?? `${PHYSICAL_PREFIX}none`, data: { Stopped: String(stopped) } };
  }
  const arn = event.ResourceProperties.SupervisorArn;
  if (arn === undefined || !arn.startsWith('arn:')) throw new TypeError(`SupervisorArn must be a state machine ARN, got ${String(arn)}`);
  const physicalId = `${PHYSICAL_PREFIX}${arn}`;
  if (event.RequestType === 'Update' && supervisorOf(event.PhysicalResourceId) === arn && (await control.running(arn)).length > 0) {
    return { physicalId, data: { Execution: '' } };
  }
  const execution = await control.start(arn, executionName(event.RequestId));
  log({ event: 'supervisor-started', execution });
  return { physicalId, data: { Execution: execution } };
}

export function createHandler(deps: SupervisorResourceDeps): (event: CustomResourceEvent) => Promise<void> {
  return async (event) => {
    const base = { StackId: event.StackId, RequestId: event.RequestId, LogicalResourceId: event.LogicalResourceId };
    let response: CustomResourceResponse;
    try {
      const { physicalId, data } = await apply(event, deps);
      response = { ...base, Status: 'SUCCESS', PhysicalResourceId: physicalId, Data: data };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      deps.log({ event: 'supervisor-resource-failed', requestType: event.RequestType, reason });
      // CloudFormation needs an answer either way, or it waits an hour; on a failed Create the id must still be one
      // the following Delete recognizes as "nothing started".
      response = { ...base, Status: 'FAILED', Reason: reason.slice(0, 1000), PhysicalResourceId: event.PhysicalResourceId ?? `${PHYSICAL_PREFIX}none` };
    }
    await deps.respond(event.ResponseURL, response);
  };
}

/** PUT to the presigned URL, without a content type (it is not part of the signature). */
function respond(url: string, response: CustomResourceResponse): Promise<void> {
  const body = JSON.stringify(response);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'PUT', headers: { 'content-type': '', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => ((res.statusCode ?? 0) < 300 ? resolve() : reject(new Error(`ResponseURL answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function stepFunctions(client: SFNClient): SupervisorControl {
  return {
    async start(stateMachineArn, name) {
      const out = await client.send(new StartExecutionCommand({ stateMachineArn, name, input: '{}' }));
      return out.executionArn ?? '';
    },
    async running(stateMachineArn) {
      const arns: string[] = [];
      let nextToken: string | undefined;
      do {
        const page = await client.send(new ListExecutionsCommand({ stateMachineArn, statusFilter: 'RUNNING', nextToken }));
        for (const e of page.executions ?? []) if (e.executionArn !== undefined) arns.push(e.executionArn);
        nextToken = page.nextToken;
      } while (nextToken !== undefined);
      return arns;
    },
    async stop(executionArn, cause) {
      try {
        await client.send(new StopExecutionCommand({ executionArn, cause }));
      } catch (error) {
        // Ended between the listing and the stop: what the stop wanted.
        if ((error as { name?: string }).name !== 'ExecutionDoesNotExist') throw error;
      }
    },
  };
}

let defaultHandler: ((event: CustomResourceEvent) => Promise<void>) | undefined;

export function handler(event: CustomResourceEvent): Promise<void> {
  defaultHandler ??= createHandler({
    control: stepFunctions(new SFNClient({})),
    respond,
    log: (e) => console.log(JSON.stringify(e)),
  });
  return defaultHandler(event);
}
