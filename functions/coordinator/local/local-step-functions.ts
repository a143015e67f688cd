import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { ConfigError } from '../../../lib/core/index.ts';
import { handler as abort } from '../abort.ts';
import { handler as collectAcks } from '../collect-acks.ts';
import { handler as commitSinks } from '../commit-sinks.ts';
import type { CycleState } from '../cycle-state.ts';
import { handler as recover } from '../recover.ts';
import { handler as trigger } from '../trigger.ts';

/**
 * Runs the coordinator's state machines (the ASL files, unchanged) on this machine with aws-local-stepfunctions:
 * every Task bound to its real handler module by the ARN placeholder in its `Resource` (a Task without a binding
 * refuses the run), RunCycles runs the cycles machine synchronously, ContinueAsNew starts the next supervisor
 * execution. Used by the coordinator's tests and by `npm run dev:cluster`; it lives beside the handlers it binds
 * (not under test/) so that both can import it, and is type-checked and linted with them.
 */

type Handler = (input: CycleState) => Promise<CycleState>;
type Json = Parameters<typeof JSON.stringify>[0];

/** The handler module behind each `${Placeholder}` of the ASL files. */
export const HANDLERS: Readonly<Record<string, Handler>> = {
  RecoverFunctionArn: recover,
  TriggerFunctionArn: trigger,
  CollectAcksFunctionArn: collectAcks,
  CommitSinksFunctionArn: commitSinks,
  AbortFunctionArn: abort,
};

const DEFINITIONS = new URL('../', import.meta.url);
const STATE_MACHINES = ['SupervisorStateMachineArn', 'CyclesStateMachineArn'] as const;

export function readDefinition(name: 'supervisor' | 'cycles'): string {
  return readFileSync(new URL(`${name}.asl.json`, DEFINITIONS), 'utf8');
}

/** What the CDK app passes as `definitionSubstitutions`; here fake ARNs that name the placeholder. */
export function localSubstitutions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(HANDLERS)) out[name] = `arn:aws:lambda:us-east-1:000000000000:function:${name}`;
  for (const name of STATE_MACHINES) out[name] = `arn:aws:states:us-east-1:000000000000:stateMachine:${name}`;
  return out;
}

export function substitute(definition: string, substitutions: Readonly<Record<string, string>>): string {
  return definition.replace(/\$\{(\w+)\}/g, (whole, name: string) => {
    const value = substitutions[name];
    if (value === undefined) throw new ConfigError(`state machine definition: no substitution for ${whole}`);
    return value;
  });
}

interface AslState {
  readonly Type: string;
  readonly Resource?: string;
}

export interface AslDefinition {
  readonly StartAt: string;
  readonly States: Readonly<Record<string, AslState>>;
}

/** asl-validator's verdict; ConfigError listing the problems. */
export function validateDefinition(name: string, definition: AslDefinition): void {
  const validate = createRequire(import.meta.url)('asl-validator') as (d: unknown) => { isValid: boolean; errorsText: (sep?: string) => string };
  const result = validate(definition);
  if (!result.isValid) throw new ConfigError(`state machine ${name} is not valid ASL: ${result.errorsText('; ')}`);
}

/** Each Task state's placeholder name (from its Resource), for binding. */
export function taskPlaceholders(definition: AslDefinition, substitutions: Readonly<Record<string, string>>): Record<string, string> {
  const byArn = new Map(Object.entries(substitutions).map(([k, v]) => [v, k]));
  const out: Record<string, string> = {};
  for (const [state, s] of Object.entries(definition.States)) {
    if (s.Type !== 'Task') continue;
    const resource = s.Resource ?? '';
    out[state] = byArn.get(resource) ?? resource;
  }
  return out;
}

export interface LocalStepFunctionsOptions {
  /** Every Wait state lasts this long instead of its Seconds/SecondsPath; 'asl': as the definition says. @default 200 */
  readonly waitMs?: number | 'asl';
  /** Every Retry waits this long between attempts. @default 50 */
  readonly retryIntervalMs?: number;
  /** Wraps a handler, e.g. to inject a failure (the real handler must still be called to do the work). */
  readonly wrap?: (placeholder: string, handler: Handler) => Handler;
  /** Input of the first supervisor execution, e.g. `{ maxChildren: 2 }`. @default {} */
  readonly input?: Record<string, Json>;
}

/** What a run did, for tests and the cost figures in docs/cluster.md. */
export interface LocalRunStats {
  /** Supervisor executions, in order (continue-as-new adds one each time). */
  supervisorExecutions: string[];
  cyclesExecutions: number;
  /** States entered, by machine: Step Functions bills Standard per state transition. */
  supervisorTransitions: number;
  cyclesTransitions: number;
  /** Handler invocations by placeholder (Lambda requests). */
  handlerCalls: Record<string, number>;
}

interface Running {
  abort(): void;
}

type RunResult = { abort: () => void; result: Promise<unknown>; eventLogs: AsyncGenerator<{ type: string }> };
interface StateMachineLike {
  run(input: unknown, options?: unknown): RunResult;
}

/** aws-local-stepfunctions declares Node 22 and uses Promise.withResolvers; Node 20 lacks it. */
export function polyfillWithResolvers(): void {
  const p = Promise as unknown as { withResolvers?: unknown };
  if (p.withResolvers !== undefined) return;
  p.withResolvers = function withResolvers<T>() {
    let resolve!: (v: T) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

export class LocalStepFunctions {
  readonly stats: LocalRunStats = { supervisorExecutions: [], cyclesExecutions: 0, supervisorTransitions: 0, cyclesTransitions: 0, handlerCalls: {} };
  private stopped = false;
  private readonly running = new Set<Running>();

  private constructor(
    private readonly supervisor: StateMachineLike,
    private readonly cycles: StateMachineLike,
    private readonly supervisorTasks: Record<string, string>,
    private readonly cyclesTasks: Record<string, string>,
    private readonly options: LocalStepFunctionsOptions,
  ) {}

  /** Reads and validates both ASL files and checks that every Task has a handler. */
  static async load(options: LocalStepFunctionsOptions = {}): Promise<LocalStepFunctions> {
    polyfillWithResolvers();
    const { StateMachine } = (await import('aws-local-stepfunctions')) as unknown as { StateMachine: new (d: unknown, o?: unknown) => StateMachineLike };
    const subs = localSubstitutions();
    const parsed = (name: 'supervisor' | 'cycles'): AslDefinition => {
      const definition = JSON.parse(substitute(readDefinition(name), subs)) as AslDefinition;
      validateDefinition(name, definition);
      return definition;
    };
    const supervisor = parsed('supervisor');
    const cycles = parsed('cycles');
    const supervisorTasks = taskPlaceholders(supervisor, subs);
    const cyclesTasks = taskPlaceholders(cycles, subs);
    const unbound = [...unboundTasks(supervisorTasks), ...unboundTasks(cyclesTasks)];
    if (unbound.length > 0) throw new ConfigError(`no local handler for Task ${unbound.join(', ')}: every Task must run its real handler module`);
    const machine = (definition: AslDefinition): StateMachineLike => new StateMachine(definition, { validationOptions: { checkArn: false } });
    return new LocalStepFunctions(machine(supervisor), machine(cycles), supervisorTasks, cyclesTasks, options);
  }

  private handler(placeholder: string): Handler {
    const real = HANDLERS[placeholder];
    if (real === undefined) throw new ConfigError(`no handler module for ${placeholder}`);
    const wrapped = this.options.wrap?.(placeholder, real) ?? real;
    return async (input) => {
      this.stats.handlerCalls[placeholder] = (this.stats.handlerCalls[placeholder] ?? 0) + 1;
      return wrapped(input);
    };
  }

  private bindings(tasks: Record<string, string>, extra: Record<string, (input: unknown) => Promise<unknown>>): Record<string, (input: unknown) => Promise<unknown>> {
    const out: Record<string, (input: unknown) => Promise<unknown>> = {};
    for (const [state, placeholder] of Object.entries(tasks)) {
      const special = extra[state];
      out[state] = special ?? ((input) => this.handler(placeholder)(input as CycleState));
    }
    return out;
  }

  private waits(): Record<string, number> {
    const ms = this.options.waitMs ?? 200;
    if (ms === 'asl') return {};
    return { Wait: ms, WaitForConfig: ms, WaitAfterAbort: ms };
  }

  private retries(tasks: Record<string, string>): Record<string, number> {
    const ms = this.options.retryIntervalMs ?? 50;
    return Object.fromEntries(Object.keys(tasks).map((state) => [state, ms]));
  }

  private async execute(machine: StateMachineLike, input: unknown, id: string, overrides: unknown, count: (n: number) => void): Promise<unknown> {
    const run = machine.run(input, { overrides, noThrowOnAbort: true, context: { Execution: { Id: id, Name: id.split(':').pop(), StartTime: new Date().toISOString() } } });
    this.running.add(run);
    const counting = (async () => {
      for await (const event of run.eventLogs) if (event.type === 'StateEntered') count(1);
    })();
    try {
      return await run.result;
    } finally {
      this.running.delete(run);
      await counting.catch(() => undefined);
    }
  }

  /** Runs one cycles execution to its end; its output (the last state's) goes back to RunCycles as `Output`. */
  private async runCycles(input: unknown): Promise<unknown> {
    const n = ++this.stats.cyclesExecutions;
    const id = `arn:aws:states:us-east-1:000000000000:express:cycles:${n}`;
    const output = await this.execute(this.cycles, input, id, { taskResourceLocalHandlers: this.bindings(this.cyclesTasks, {}), waitTimeOverrides: this.waits(), retryIntervalOverrides: this.retries(this.cyclesTasks) }, (k) => {
      this.stats.cyclesTransitions += k;
    });
    return { Output: output ?? { status: 'stopped' } };
  }

  /**
   * Runs supervisor executions until one ends without continuing as new, or `stop` is called. Resolves with the
   * last execution's output.
   */
  async run(): Promise<unknown> {
    let input: unknown = this.options.input ?? {};
    let last: unknown;
    while (!this.stopped) {
      const id = `arn:aws:states:us-east-1:000000000000:execution:supervisor:${this.stats.supervisorExecutions.length + 1}`;
      this.stats.supervisorExecutions.push(id);
      let next: unknown;
      const extra: Record<string, (input: unknown) => Promise<unknown>> = {};
      for (const [state, placeholder] of Object.entries(this.supervisorTasks)) {
        if (placeholder === 'arn:aws:states:::states:startExecution.sync:2') extra[state] = (i) => this.runCycles((i as { Input: unknown }).Input);
        if (placeholder === 'arn:aws:states:::states:startExecution') {
          extra[state] = async (i) => {
            next = (i as { Input: unknown }).Input;
            return { ExecutionArn: 'next' };
          };
        }
      }
      last = await this.execute(this.supervisor, input, id, { taskResourceLocalHandlers: this.bindings(this.supervisorTasks, extra), waitTimeOverrides: this.waits(), retryIntervalOverrides: this.retries(this.supervisorTasks) }, (k) => {
        this.stats.supervisorTransitions += k;
      });
      if (next === undefined) break;
      input = next;
    }
    return last;
  }

  /** Ends the run: the executions under way are aborted where they are (as StopExecution would). */
  stop(): void {
    this.stopped = true;
    for (const run of this.running) run.abort();
  }
}

/** Tasks (as `state (resource)`) that neither name a handler module nor start an execution. */
export function unboundTasks(tasks: Readonly<Record<string, string>>): string[] {
  return Object.entries(tasks)
    .filter(([, placeholder]) => HANDLERS[placeholder] === undefined && !isStartExecution(placeholder))
    .map(([state, placeholder]) => `${state} (${placeholder})`);
}

function isStartExecution(resource: string): boolean {
  return resource.startsWith('arn:aws:states:::states:startExecution');
}
