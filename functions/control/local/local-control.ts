import { readFileSync } from 'node:fs';
import { ConfigError } from '../../../lib/core/index.ts';
import { polyfillWithResolvers, substitute, taskPlaceholders, validateDefinition, type AslDefinition } from '../../coordinator/local/local-step-functions.ts';
import { handler as awaitResult } from '../await-result.ts';
import type { ControlStep } from '../control-step.ts';
import { handler as fileRequest, type FileRequestInput } from '../file-request.ts';

/**
 * Runs the control state machine (functions/control/control.asl.json, unchanged) on this machine with
 * aws-local-stepfunctions, as functions/coordinator/local/local-step-functions.ts runs the coordinator's: each
 * Task bound to its real handler by its `${Placeholder}`, the supervisor's StartExecution to `startSupervisor`.
 */

type Task = (input: unknown) => Promise<unknown>;

/** The handler module behind each Lambda placeholder of control.asl.json. */
export const CONTROL_HANDLERS: Readonly<Record<string, Task>> = {
  FileRequestFunctionArn: (input) => fileRequest(input as FileRequestInput),
  AwaitResultFunctionArn: (input) => awaitResult(input as ControlStep),
};

const START_SUPERVISOR = 'SupervisorStateMachineArn';
const START_EXECUTION = 'arn:aws:states:::states:startExecution';

/** A StartExecution Task of the supervisor state machine (the placeholder is in its Parameters, not its Resource). */
function startsSupervisor(definition: AslDefinition, state: string, subs: Readonly<Record<string, string>>): boolean {
  const task = definition.States[state] as { Resource?: string; Parameters?: { StateMachineArn?: string } } | undefined;
  return task?.Resource === START_EXECUTION && task.Parameters?.StateMachineArn === subs[START_SUPERVISOR];
}

export function readControlDefinition(): string {
  return readFileSync(new URL('../control.asl.json', import.meta.url), 'utf8');
}

/** What the CDK app passes as `definitionSubstitutions`; here fake ARNs that name the placeholder. */
export function controlSubstitutions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(CONTROL_HANDLERS)) out[name] = `arn:aws:lambda:us-east-1:000000000000:function:${name}`;
  out[START_SUPERVISOR] = `arn:aws:states:us-east-1:000000000000:stateMachine:${START_SUPERVISOR}`;
  return out;
}

export interface LocalControlOptions {
  /** Starts a supervisor execution (the resume's StartExecution). */
  readonly startSupervisor: () => Promise<void>;
  /** The Wait state lasts this long instead of its 5 s. @default 100 */
  readonly waitMs?: number;
  /** Every Retry waits this long between attempts. @default 50 */
  readonly retryIntervalMs?: number;
}

/** How an execution ended, as the console shows it. */
export type ControlExecution =
  | { readonly status: 'SUCCEEDED'; readonly output: unknown; readonly states: readonly string[] }
  | { readonly status: 'FAILED'; readonly error: string; readonly cause: string; readonly states: readonly string[] };

type RunResult = { result: Promise<unknown>; eventLogs: AsyncGenerator<{ type: string; state?: { name: string } }> };
interface StateMachineLike {
  run(input: unknown, options?: unknown): RunResult;
}

export class LocalControlStateMachine {
  private executions = 0;

  private constructor(
    private readonly machine: StateMachineLike,
    private readonly tasks: Readonly<Record<string, string>>,
    private readonly options: LocalControlOptions,
  ) {}

  /** Reads and validates control.asl.json and checks that every Task has a binding. */
  static async load(options: LocalControlOptions): Promise<LocalControlStateMachine> {
    polyfillWithResolvers();
    const { StateMachine } = (await import('aws-local-stepfunctions')) as unknown as { StateMachine: new (d: unknown, o?: unknown) => StateMachineLike };
    const subs = controlSubstitutions();
    const definition = JSON.parse(substitute(readControlDefinition(), subs)) as AslDefinition;
    validateDefinition('control', definition);
    const tasks = taskPlaceholders(definition, subs);
    const unbound = Object.entries(tasks).filter(([state, p]) => CONTROL_HANDLERS[p] === undefined && !startsSupervisor(definition, state, subs));
    if (unbound.length > 0) throw new ConfigError(`no local handler for Task ${unbound.map(([s, p]) => `${s} (${p})`).join(', ')}`);
    return new LocalControlStateMachine(new StateMachine(definition, { validationOptions: { checkArn: false } }), tasks, options);
  }

  /** One execution named `name` (the request id) with `input`, to its end. */
  async run(input: unknown, name = `control-${++this.executions}`): Promise<ControlExecution> {
    const handlers: Record<string, Task> = {};
    for (const [state, placeholder] of Object.entries(this.tasks)) {
      handlers[state] =
        placeholder === START_EXECUTION
          ? async () => {
              await this.options.startSupervisor();
              return {};
            }
          : (CONTROL_HANDLERS[placeholder] as Task);
    }
    const retries = Object.fromEntries(Object.keys(this.tasks).map((s) => [s, this.options.retryIntervalMs ?? 50]));
    const execution = `arn:aws:states:us-east-1:000000000000:execution:control:${name}`;
    const run = this.machine.run(input, {
      overrides: { taskResourceLocalHandlers: handlers, waitTimeOverrides: { Wait: this.options.waitMs ?? 100 }, retryIntervalOverrides: retries },
      context: { Execution: { Id: execution, Name: name, StartTime: new Date().toISOString() } },
    });
    const states: string[] = [];
    const entered = (async () => {
      for await (const event of run.eventLogs) if (event.type === 'StateEntered' && event.state !== undefined) states.push(event.state.name);
    })();
    try {
      const output = await run.result;
      return { status: 'SUCCEEDED', output, states };
    } catch (error) {
      const failure = (error as { cause?: unknown }).cause;
      if (!(failure instanceof Error)) throw error;
      return { status: 'FAILED', error: failure.name, cause: failure.message, states };
    } finally {
      await entered.catch(() => undefined);
    }
  }
}
