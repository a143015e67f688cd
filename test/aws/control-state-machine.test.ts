import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { ControlKeys, type ClusterConfigItem, type ControlItem, type CoordinatorItem, type RequestItem } from '../../lib/cluster/control-items.ts';
import { LocalStepFunctions } from '../../functions/coordinator/local/local-step-functions.ts';
import { LocalControlStateMachine, controlSubstitutions, readControlDefinition } from '../../functions/control/local/local-control.ts';
import { useControlSettings } from '../../functions/control/settings.ts';
import { BUCKET, CONTROL, dynamo, fakeWorkers, newJob, until, useCoordinatorEmulators, type Job } from './cluster-coordinator-harness.ts';

/**
 * The control state machine (functions/control/control.asl.json) run by aws-local-stepfunctions with its Tasks
 * bound to the real handlers, against DynamoDB Local and s3rver, with the real coordinator (the supervisor and
 * cycles ASL run locally) answering its requests and fake workers acking (test/aws/cluster-coordinator-harness.ts).
 */

useCoordinatorEmulators();

function useControl(job: Job, client: DynamoDBClient = dynamo.client): void {
  useControlSettings({ jobId: job.jobId, controlTable: CONTROL, dynamo: client, now: () => Date.now() });
}

/** A supervisor run of the local coordinator; `stop` aborts it where it is. */
async function supervisor(): Promise<{ sfn: LocalStepFunctions; run: Promise<unknown> }> {
  const sfn = await LocalStepFunctions.load({ waitMs: 100 });
  return { sfn, run: sfn.run() };
}

describe('control state machine (local Step Functions, DynamoDB Local, s3rver)', { timeout: 85_000 }, () => {
  it('is valid ASL whose Tasks are the two handlers and the supervisor start, by these placeholder names', async () => {
    const definition = JSON.parse(readControlDefinition()) as { States: Record<string, { Type: string; Resource?: string }> };
    const validate = createRequire(import.meta.url)('asl-validator') as (d: unknown) => { isValid: boolean; errorsText: (sep?: string) => string };
    const verdict = validate(definition);
    expect(verdict.isValid, verdict.errorsText('; ')).toBe(true);
    const resources = Object.values(definition.States).filter((s) => s.Type === 'Task').map((s) => s.Resource);
    expect(resources.sort()).toEqual(['${AwaitResultFunctionArn}', '${FileRequestFunctionArn}', 'arn:aws:states:::states:startExecution'].sort());
    expect(readControlDefinition()).toContain('${SupervisorStateMachineArn}');
    expect(Object.keys(controlSubstitutions()).sort()).toEqual(['AwaitResultFunctionArn', 'FileRequestFunctionArn', 'SupervisorStateMachineArn']);
  });

  it('status, savepoint and stop through the coordinator, then resume from the stop savepoint', async () => {
    const job = await newJob({ intervalMs: 60_000 });
    useControl(job);
    const workers = fakeWorkers(job);
    let current = await supervisor();
    const control = await LocalControlStateMachine.load({
      startSupervisor: async () => {
        current = await supervisor();
      },
    });
    try {
      await until('the coordinator', async () => (await job.item<CoordinatorItem>(ControlKeys.coordinator))?.state.status === 'running');
      const status = await control.run({ command: 'status' });
      expect(status).toMatchObject({ status: 'SUCCEEDED', output: { command: 'status', jobId: job.jobId, deployed: true, parallelism: 2, state: 'running' } });
      expect(status.status === 'SUCCEEDED' && JSON.stringify(status.output)).not.toContain('"tasks"');

      const savepoint = await control.run({ command: 'savepoint' }, 'sp-console-1');
      expect(savepoint.status, JSON.stringify(savepoint)).toBe('SUCCEEDED');
      const sp = await job.item<RequestItem>(ControlKeys.request('sp-console-1'));
      expect(sp).toMatchObject({ kind: 'savepoint', status: 'succeeded' });
      expect(savepoint.status === 'SUCCEEDED' && savepoint.output).toEqual({
        command: 'savepoint',
        jobId: job.jobId,
        requestId: 'sp-console-1',
        checkpointId: sp?.result?.checkpointId,
        savepoint: sp?.result?.path,
      });
      expect(sp?.result?.path).toContain(`${BUCKET}/${job.jobId}/savepoints/`);
      expect(savepoint.states).toContain('AwaitResult');

      const stop = await control.run({ command: 'stop' }, 'stop-console-1');
      expect(stop.status, JSON.stringify(stop)).toBe('SUCCEEDED');
      await current.run; // the supervisor ends once the job is halted
      const halted = (await job.control())?.halted;
      expect(halted?.checkpointId).toBe(stop.status === 'SUCCEEDED' ? (stop.output as { checkpointId: number }).checkpointId : -1);
      expect(await control.run({ command: 'status' })).toMatchObject({ status: 'SUCCEEDED', output: { state: 'halted' } });
      // A savepoint of a halted job would wait for a coordinator that does not run: refused at once.
      expect(await control.run({ command: 'savepoint' }, 'sp-console-2')).toMatchObject({ status: 'FAILED', error: 'Sluice.Refused', cause: expect.stringContaining('resume it first') });
      expect(await job.item(ControlKeys.request('sp-console-2'))).toBeUndefined();

      const resume = await control.run({ command: 'resume' }, 'resume-console-1');
      expect(resume.status, JSON.stringify(resume)).toBe('SUCCEEDED');
      expect(resume.status === 'SUCCEEDED' && resume.output).toMatchObject({ command: 'resume', restoredFrom: halted?.savepointPath, checkpointId: halted?.checkpointId });
      const after = await job.control();
      expect(after?.halted).toBeUndefined();
      expect(after?.completed).toBeUndefined(); // slots restore `config.restoreFrom`, the stop savepoint
      expect(after?.resumed).toMatchObject({ requestId: 'resume-console-1', savepointPath: halted?.savepointPath });
      expect((await job.item<ClusterConfigItem>(ControlKeys.config))?.restoreFrom).toBe(halted?.savepointPath);
      // The new coordinator goes on after the savepoint: the next checkpoint completes with a higher id.
      await control.run({ command: 'savepoint' }, 'sp-console-3').then((r) => expect(r.status, JSON.stringify(r)).toBe('SUCCEEDED'));
      const sp3 = await job.item<RequestItem>(ControlKeys.request('sp-console-3'));
      expect(sp3?.result?.checkpointId).toBeGreaterThan(halted?.checkpointId ?? Infinity);
      // Resuming a running job is refused with the reason; the same request again is a no-op success.
      expect(await control.run({ command: 'resume' }, 'resume-console-2')).toMatchObject({ status: 'FAILED', error: 'Sluice.Refused', cause: expect.stringContaining('not stopped') });
    } finally {
      current.sfn.stop();
      await current.run.catch(() => undefined);
      await workers.stop();
      useControlSettings(undefined);
    }
  });

  it('refuses bad input and a job that is not deployed, with a readable cause', async () => {
    const job = await newJob();
    const control = await LocalControlStateMachine.load({ startSupervisor: async () => undefined });
    useControl(job);
    expect(await control.run({ command: 'restart' })).toMatchObject({ status: 'FAILED', error: 'Sluice.Refused', cause: expect.stringContaining('"status" | "savepoint" | "stop" | "resume"') });
    expect(await control.run({})).toMatchObject({ status: 'FAILED', error: 'Sluice.Refused' });
    useControlSettings({ jobId: 'no-such-job', controlTable: CONTROL, dynamo: dynamo.client, now: () => Date.now() });
    expect(await control.run({ command: 'status' })).toMatchObject({ status: 'FAILED', error: 'Sluice.Refused', cause: expect.stringContaining('sluice aws init') });
    expect(await control.run({ command: 'resume' })).toMatchObject({ status: 'FAILED', error: 'Sluice.Refused', cause: expect.stringContaining('sluice aws init') });
    useControlSettings(undefined);
  });

  it('retries a throttled FileRequest, and times out with the reason when no coordinator answers', async () => {
    const job = await newJob();
    let throttled = 0;
    const client = new DynamoDBClient({ ...dynamo.clientConfig, requestHandler: new NodeHttpHandler() });
    client.middlewareStack.add(
      (next) => async (args) => {
        if (throttled < 2) {
          throttled++;
          throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $metadata: {} });
        }
        return next(args);
      },
      { step: 'initialize', name: 'throttleTwice' },
    );
    useControl(job, client);
    const control = await LocalControlStateMachine.load({ startSupervisor: async () => undefined, waitMs: 5 });
    const status = await control.run({ command: 'status' });
    expect(status, JSON.stringify(status)).toMatchObject({ status: 'SUCCEEDED', output: { state: 'waiting-for-coordinator' } });
    expect(throttled).toBe(2);
    // No supervisor runs: the request stays queued, the execution gives up after its 120 polls.
    useControl(job);
    const savepoint = await control.run({ command: 'savepoint' }, 'sp-unanswered');
    expect(savepoint).toMatchObject({ status: 'FAILED', error: 'Sluice.TimedOut', cause: expect.stringContaining('still queued after 120 polls') });
    expect((await job.item<RequestItem>(ControlKeys.request('sp-unanswered')))?.status).toBe('queued');
    expect(savepoint.states.filter((s) => s === 'AwaitResult')).toHaveLength(120);
    const stored = await job.item<ControlItem>(ControlKeys.control);
    expect(stored?.halted).toBeUndefined();
    useControlSettings(undefined);
    client.destroy();
  });
});
