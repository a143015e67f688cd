import { controlSettings } from './settings.ts';
import { isControlCommand, openAdmin, refuseUnlessRetriable, statusResult, type ControlStep } from './control-step.ts';

/** What the ASL passes: the execution's input as given in the console, and the execution's name and ARN. */
export interface FileRequestInput {
  readonly input: unknown;
  readonly requestId: string;
  readonly execution?: string;
}

/**
 * FileRequest (control state machine): `status` reads the job and ends there; `savepoint` and `stop` put the
 * `request#<execution name>` item the coordinator answers (conditional: a retry returns the same request);
 * `resume` clears a halted job's `halted` so that its slots restore from the stop savepoint (`resuming`: the ASL
 * then starts a supervisor execution). Bad input or a job in the wrong state is refused with a readable cause.
 */
export function handler(event: FileRequestInput): Promise<ControlStep> {
  const command = (event.input as { command?: unknown } | null | undefined)?.command;
  const requestId = event.requestId;
  if (!isControlCommand(command)) {
    return Promise.resolve({
      command: 'status',
      requestId,
      outcome: 'refused',
      polls: 0,
      cause: `the input must be {"command": "status" | "savepoint" | "stop" | "resume"}, got ${JSON.stringify(event.input) ?? 'nothing'}`,
    });
  }
  const base = { command, requestId, polls: 0 };
  return refuseUnlessRetriable(base, async () => {
    const settings = controlSettings();
    const admin = openAdmin(settings);
    switch (command) {
      case 'status': {
        const status = await admin.status();
        if (status.config === undefined) {
          return { ...base, outcome: 'refused', cause: `job "${settings.jobId}" has no config in table ${settings.controlTable}: deploy it with "sluice aws init" first` };
        }
        return { ...base, outcome: 'succeeded', result: { command, ...statusResult(status) } };
      }
      case 'savepoint':
      case 'stop': {
        // No supervisor runs for a halted job: the request would wait out the whole timeout unanswered.
        const halted = (await admin.status()).control?.halted;
        if (halted !== undefined) {
          return { ...base, outcome: 'refused', cause: `job "${settings.jobId}" is halted (stopped at savepoint ${halted.savepointPath}): resume it first with {"command": "resume"}` };
        }
        await admin.request(command, requestId, event.execution ?? 'step-functions');
        return { ...base, outcome: 'pending', cause: `the coordinator did not answer ${command} request "${requestId}" of job "${settings.jobId}" in time: is its supervisor running? The request stays queued` };
      }
      case 'resume': {
        const resumed = await admin.resume(requestId);
        return { ...base, outcome: 'resuming', result: { command, jobId: settings.jobId, restoredFrom: resumed.savepointPath, checkpointId: resumed.checkpointId } };
      }
    }
  });
}
