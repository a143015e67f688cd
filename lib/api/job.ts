import type { StreamEnvironment } from './environment.ts';

/** A job flag, declared by the job and parsed by `sluice run` (camelCase key `maxDelayMs` = `--max-delay-ms`). */
export type FlagSpec =
  | { readonly type: 'string'; readonly description: string; readonly default?: string; readonly required?: boolean; readonly choices?: readonly string[] }
  | { readonly type: 'number'; readonly description: string; readonly default?: number; readonly required?: boolean; readonly integer?: boolean; readonly min?: number }
  | { readonly type: 'boolean'; readonly description: string; readonly default?: boolean };

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

type FlagValue<S extends FlagSpec> = S extends { type: 'string' }
  ? string
  : S extends { type: 'number' }
    ? number
    : boolean;

type IsPresent<S extends FlagSpec> = S extends { required: true } ? true : S extends { default: unknown } ? true : S extends { type: 'boolean' } ? true : false;

/** Parsed flags: required flags and flags with defaults are always present; the others may be undefined. */
export type ParsedFlags<S extends FlagSpecs> = {
  readonly [K in keyof S as IsPresent<S[K]> extends true ? K : never]: FlagValue<S[K]>;
} & {
  readonly [K in keyof S as IsPresent<S[K]> extends true ? never : K]?: FlagValue<S[K]>;
};

/**
 * A job module's default export. `build` must be deterministic: every worker thread imports the module and
 * builds the same pipeline from the same flags, then runs its own share of the subtasks.
 */
export interface JobDefinition<S extends FlagSpecs = FlagSpecs> {
  readonly name: string;
  readonly description?: string;
  readonly flags: S;
  build(env: StreamEnvironment, flags: ParsedFlags<S>): void | Promise<void>;
}

export function defineJob<const S extends FlagSpecs>(definition: JobDefinition<S>): JobDefinition<S> {
  return definition;
}

export function isJobDefinition(value: unknown): value is JobDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as JobDefinition).name === 'string' &&
    typeof (value as JobDefinition).build === 'function'
  );
}
