import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COORDINATOR_HANDLERS, CYCLES_ASL, SUPERVISOR_ASL } from '../../infra/constructs/job-coordinator.ts';
import { CONTROL_ASL, CONTROL_HANDLERS } from '../../infra/constructs/job-control.ts';
import { REPO_ROOT } from '../../infra/constructs/lambda-bundling.ts';

interface State {
  readonly Type: string;
  readonly Resource?: string;
  readonly TimeoutSeconds?: number;
  readonly Parameters?: Record<string, unknown>;
}
interface Definition {
  readonly States: Record<string, State>;
}

const validate = createRequire(import.meta.url)('asl-validator') as (d: unknown) => { isValid: boolean; errorsText: (sep?: string) => string };

/** Each state machine the construct builds: its file, the handler module behind each Lambda placeholder, and the machines it starts. */
const MACHINES: { file: string; handlers: Record<string, string>; machines: readonly string[] }[] = [
  {
    file: SUPERVISOR_ASL,
    handlers: Object.fromEntries(Object.values(COORDINATOR_HANDLERS).map((h) => [h.placeholder, h.entry])),
    machines: ['CyclesStateMachineArn', 'SupervisorStateMachineArn'],
  },
  { file: CYCLES_ASL, handlers: Object.fromEntries(Object.values(COORDINATOR_HANDLERS).map((h) => [h.placeholder, h.entry])), machines: [] },
  { file: CONTROL_ASL, handlers: Object.fromEntries(Object.values(CONTROL_HANDLERS).map((h) => [h.placeholder, h.entry])), machines: ['SupervisorStateMachineArn'] },
];

const STATES_INTEGRATION = /^arn:aws:states:::states:startExecution(\.sync:2)?$/;
const PLACEHOLDER = /^\$\{([A-Za-z]+)\}$/;

function definitionOf(file: string): Definition {
  return JSON.parse(readFileSync(join(REPO_ROOT, file), 'utf8')) as Definition;
}

/** What is wrong with the Task states' bindings: each Task calls a handler module that exists or starts a known machine. */
async function bindingProblems(definition: Definition, handlers: Record<string, string>, machines: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  const tasks = Object.entries(definition.States).filter(([, s]) => s.Type === 'Task');
  if (tasks.length === 0) problems.push('no Task states');
  for (const [name, state] of tasks) {
    if (!((state.TimeoutSeconds ?? 0) > 0)) problems.push(`${name}: no TimeoutSeconds`);
    const placeholder = PLACEHOLDER.exec(state.Resource ?? '')?.[1];
    if (placeholder !== undefined) {
      const entry = handlers[placeholder];
      if (entry === undefined) {
        problems.push(`${name}: no handler for \${${placeholder}}`);
        continue;
      }
      const path = join(REPO_ROOT, entry);
      if (!existsSync(path)) {
        problems.push(`${name}: ${entry} does not exist`);
        continue;
      }
      const module = (await import(pathToFileURL(path).href)) as { handler?: unknown };
      if (typeof module.handler !== 'function') problems.push(`${name}: ${entry} exports no handler`);
      continue;
    }
    if (!STATES_INTEGRATION.test(state.Resource ?? '')) {
      problems.push(`${name}: ${state.Resource} is neither a handler placeholder nor a Step Functions integration`);
      continue;
    }
    const target = PLACEHOLDER.exec(String(state.Parameters?.['StateMachineArn']))?.[1];
    if (target === undefined || !machines.includes(target)) problems.push(`${name}: starts an unknown machine ${String(target)}`);
  }
  return problems;
}

describe('ASL definitions', () => {
  for (const { file, handlers, machines } of MACHINES) {
    it(`${file} is valid ASL (asl-validator)`, () => {
      const result = validate(definitionOf(file));
      expect(result.isValid, result.errorsText('; ')).toBe(true);
    });

    it(`${file}: every Task state is bound to a handler module that exists and exports handler, or starts a known machine`, async () => {
      expect(await bindingProblems(definitionOf(file), handlers, machines)).toEqual([]);
    });
  }

  it('catches a Task without a handler, a missing module, a module without handler and an unknown machine', async () => {
    const task = (Resource: string, Parameters?: Record<string, unknown>): State => ({ Type: 'Task', Resource, TimeoutSeconds: 10, ...(Parameters === undefined ? {} : { Parameters }) });
    const definition: Definition = {
      States: {
        Unbound: task('${NoSuchFunctionArn}'),
        Missing: task('${MissingArn}'),
        NoExport: task('${SettingsArn}'),
        Unknown: task('arn:aws:states:::states:startExecution', { StateMachineArn: '${OtherStateMachineArn}' }),
        NoTimeout: { Type: 'Task', Resource: '${RecoverFunctionArn}' },
      },
    };
    const problems = await bindingProblems(
      definition,
      { MissingArn: 'functions/coordinator/nope.ts', SettingsArn: 'functions/coordinator/settings.ts', RecoverFunctionArn: COORDINATOR_HANDLERS.Recover.entry },
      [],
    );
    expect(problems.map((p) => p.split(':')[0])).toEqual(['Unbound', 'Missing', 'NoExport', 'Unknown', 'NoTimeout']);
    const valid = validate({ StartAt: 'A', States: { A: { Type: 'Task' } } });
    expect(valid.isValid).toBe(false);
  });
});
