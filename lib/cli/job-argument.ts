const MODULE_FILE = /\.(ts|mts|cts|js|mjs|cjs)$/;

/**
 * Finds the job module path in the arguments of `sluice run` before they can be parsed: the job's flags are only
 * known once its module is loaded. Prefers the first operand that names a module file, else the first operand;
 * values of `optionsWithValue` (e.g. `--parallelism 2`) are not operands. Everything after `--` is an operand.
 */
export function findJobArgument(args: readonly string[], optionsWithValue: ReadonlySet<string>): string | undefined {
  const operands: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (arg.startsWith('-') && arg.length > 1) {
      if (!arg.includes('=') && optionsWithValue.has(arg)) i++;
      continue;
    }
    operands.push(arg);
  }
  return operands.find((a) => MODULE_FILE.test(a)) ?? operands[0];
}
