import type { ClusterJobStatus } from '../../lib/cluster/job-status.ts';
import { SluiceError } from '../../lib/core/index.ts';
import { JobAdminTable } from '../../lib/connectors/aws/cluster/job-admin-table.ts';
import type { ControlSettings } from './settings.ts';

/**
 * The payload of the control state machine (functions/control/control.asl.json) between its states. It carries ids
 * only; the request and the job live in the control table. `outcome` drives the ASL's Choice states:
 * `succeeded` ends the execution with `result` as its output, `refused` and `failed` end it in a Fail state whose
 * Cause is `cause`, `resuming` starts a supervisor execution, `pending` waits and polls again.
 */
export interface ControlStep {
  readonly command: ControlCommand;
  /** The execution's name: the `request#<id>` of a savepoint or stop, the `resumed.requestId` of a resume. */
  readonly requestId: string;
  readonly outcome: 'pending' | 'resuming' | 'succeeded' | 'refused' | 'failed';
  /** AwaitResult calls so far; the ASL gives up after its bound. */
  readonly polls: number;
  readonly result?: Readonly<Record<string, unknown>>;
  /** Why it was refused or failed, or (pending) what the timeout's Cause says. */
  readonly cause?: string;
}

export const CONTROL_COMMANDS = ['status', 'savepoint', 'stop', 'resume'] as const;
export type ControlCommand = (typeof CONTROL_COMMANDS)[number];

export function isControlCommand(value: unknown): value is ControlCommand {
  return typeof value === 'string' && (CONTROL_COMMANDS as readonly string[]).includes(value);
}

export function openAdmin(settings: ControlSettings): JobAdminTable {
  return new JobAdminTable({ tableName: settings.controlTable, jobId: settings.jobId, client: settings.dynamo, now: settings.now });
}

/**
 * Runs one handler's work: a retriable failure (throttling, a DynamoDB hiccup) is thrown, for the ASL's Retry; any
 * other failure becomes a refusal with a readable cause (a Lambda error's Cause is a JSON blob with a stack trace).
 */
export async function refuseUnlessRetriable(step: Pick<ControlStep, 'command' | 'requestId' | 'polls'>, work: () => Promise<ControlStep>): Promise<ControlStep> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof SluiceError && error.retriable) throw error;
    const message = error instanceof Error ? error.message : String(error);
    return { ...step, outcome: 'refused', cause: message };
  }
}

/**
 * What `status` ends with: the job as `sluice aws status --json` shows it, without the config's task lists and
 * edges (P of each, too big for a Step Functions payload of 256 KB at scale) and without answered requests.
 */
export function statusResult(status: ClusterJobStatus): Record<string, unknown> {
  const { config, control, coordinator } = status;
  return {
    jobId: status.jobId,
    deployed: config !== undefined,
    ...(config === undefined
      ? {}
      : {
          parallelism: config.parallelism,
          maxParallelism: config.maxParallelism,
          fingerprint: config.fingerprint,
          checkpointDir: config.checkpointDir,
          ...(config.restoreFrom === undefined ? {} : { restoreFrom: config.restoreFrom }),
          ...(config.exchangeStream === undefined ? {} : { exchangeStream: config.exchangeStream }),
        }),
    state: jobState(status),
    ...(control === undefined ? {} : { control }),
    ...(coordinator === undefined
      ? {}
      : { coordinator: { execution: coordinator.execution, status: coordinator.status, lastCompleted: coordinator.lastCompleted, inFlight: coordinator.inFlight } }),
    leases: status.leases.map(({ slot, owner, epoch, counter, pendingOwner }) => ({ slot, owner, epoch, counter, pendingOwner })),
    openRequests: status.requests.filter((r) => r.status === 'queued' || r.status === 'running'),
  };
}

/** One word for the console: not deployed, halted (stopped at a savepoint), or the coordinator's status. */
function jobState(status: ClusterJobStatus): string {
  if (status.config === undefined) return 'not-deployed';
  if (status.control?.halted !== undefined) return 'halted';
  return status.coordinator?.status ?? 'waiting-for-coordinator';
}
