import { controlSettings } from './settings.ts';
import { openAdmin, refuseUnlessRetriable, type ControlStep } from './control-step.ts';

/**
 * AwaitResult (control state machine): one look at what FileRequest started. A savepoint or stop request is
 * `succeeded` (the savepoint's URI), `failed` (the coordinator's reason) or still pending; a resume has succeeded
 * once a new coordinator runs (Recover of the new supervisor took the job over) and the job is not halted. `polls`
 * counts calls; the ASL bounds them.
 */
export function handler(step: ControlStep): Promise<ControlStep> {
  const polls = step.polls + 1;
  const base = { command: step.command, requestId: step.requestId, polls };
  return refuseUnlessRetriable(base, async () => {
    const settings = controlSettings();
    const admin = openAdmin(settings);
    const job = `job "${settings.jobId}"`;
    if (step.command === 'resume') {
      const status = await admin.status();
      const resumed = status.control?.resumed;
      if (status.control?.halted === undefined && status.coordinator?.status === 'running') {
        return { ...base, outcome: 'succeeded', result: { ...step.result, execution: status.coordinator.execution } };
      }
      return {
        ...base,
        outcome: 'pending',
        ...(step.result === undefined ? {} : { result: step.result }),
        cause: `${job} was resumed from ${resumed?.savepointPath ?? 'its stop savepoint'}, but no coordinator took it over in time: is the supervisor running?`,
      };
    }
    const request = await admin.readRequest(step.requestId);
    if (request === undefined) return { ...base, outcome: 'failed', cause: `${step.command} request "${step.requestId}" of ${job} is gone from table ${settings.controlTable}` };
    if (request.status === 'failed') return { ...base, outcome: 'failed', cause: `${request.kind} request "${request.id}" of ${job} failed: ${request.error ?? 'no reason given'}` };
    if (request.status === 'succeeded') {
      return {
        ...base,
        outcome: 'succeeded',
        result: { command: step.command, jobId: settings.jobId, requestId: request.id, checkpointId: request.result?.checkpointId, savepoint: request.result?.path },
      };
    }
    return { ...base, outcome: 'pending', cause: `${request.kind} request "${request.id}" of ${job} is still ${request.status} after ${polls} polls: is the coordinator's supervisor running? The request stays queued; the coordinator still answers it` };
  });
}
