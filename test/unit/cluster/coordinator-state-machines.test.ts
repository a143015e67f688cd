import { describe, expect, it } from 'vitest';
import {
  HANDLERS,
  localSubstitutions,
  readDefinition,
  substitute,
  taskPlaceholders,
  unboundTasks,
  validateDefinition,
  type AslDefinition,
} from '../../../functions/coordinator/local/local-step-functions.ts';

interface TaskState {
  readonly Type: string;
  readonly Resource?: string;
  readonly TimeoutSeconds?: number;
  readonly Retry?: unknown[];
  readonly Catch?: { readonly Next: string }[];
}

const NESTED = new Set(['arn:aws:states:::states:startExecution.sync:2', 'arn:aws:states:::states:startExecution']);

describe.each(['supervisor', 'cycles'] as const)('%s.asl.json', (name) => {
  const subs = localSubstitutions();
  const definition = JSON.parse(substitute(readDefinition(name), subs)) as AslDefinition & { States: Record<string, TaskState> };

  it('is valid ASL once its placeholders are substituted', () => {
    expect(() => validateDefinition(name, definition)).not.toThrow();
  });

  it('binds every Task to an existing handler module or a nested execution', () => {
    const tasks = taskPlaceholders(definition, subs);
    expect(Object.keys(tasks).length).toBeGreaterThan(0);
    for (const [state, placeholder] of Object.entries(tasks)) {
      expect(HANDLERS[placeholder] !== undefined || NESTED.has(placeholder), `${state} -> ${placeholder}`).toBe(true);
    }
  });

  it('gives every Task a TimeoutSeconds, a Retry and a Catch (to Abort, or out of Abort itself)', () => {
    for (const [state, s] of Object.entries(definition.States)) {
      if (s.Type !== 'Task') continue;
      expect(s.TimeoutSeconds, state).toBeGreaterThan(0);
      expect(s.Retry?.length, state).toBeGreaterThan(0);
      const next = s.Catch?.[0]?.Next;
      expect(next, state).toBeDefined();
      if (state !== 'Abort') expect(next, state).toBe('Abort');
    }
  });

  it('has only the documented placeholders', () => {
    expect(() => substitute(readDefinition(name), {})).toThrow(/no substitution/);
  });
});

describe('unboundTasks', () => {
  it('names a Task whose Resource is no handler module and no nested execution', () => {
    const subs = localSubstitutions();
    const definition: AslDefinition = {
      StartAt: 'A',
      States: { A: { Type: 'Task', Resource: subs['TriggerFunctionArn'] }, B: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:1:function:Other' } },
    };
    expect(unboundTasks(taskPlaceholders(definition, subs))).toEqual(['B (arn:aws:lambda:us-east-1:1:function:Other)']);
  });
});

describe('the supervisor', () => {
  it('continues as new after maxChildren (default 300) cycles executions', () => {
    const d = JSON.parse(readDefinition('supervisor')) as { States: Record<string, { Parameters?: Record<string, unknown> }> };
    expect(d.States['InitDefault']?.Parameters?.['maxChildren']).toBe(300);
    expect(JSON.stringify(d.States['AfterCycles'])).toContain('ContinueAsNew');
  });

  it('ends a halted or finished job only through Recover, which commits the pending sinks first', () => {
    const d = JSON.parse(readDefinition('supervisor')) as { States: Record<string, { Choices?: { StringEquals?: string; Next: string }[] }> };
    for (const status of ['halted', 'finished']) {
      expect(d.States['AfterCycles']?.Choices?.find((c) => c.StringEquals === status)?.Next, status).toBe('Recover');
      expect(d.States['Recovered']?.Choices?.find((c) => c.StringEquals === status)?.Next, status).toBe('Done');
    }
  });
});
