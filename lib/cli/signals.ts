import { ExitCode } from './exit-codes.ts';

/**
 * Stops at once on SIGINT / SIGTERM with the conventional exit code (130 / 143). Exiting ends the worker
 * threads; a file sink's in-progress files stay hidden (dot-prefixed), so no partial output looks finished.
 */
export function exitOnSignals(report: (text: string) => void): void {
  const handle = (signal: NodeJS.Signals, code: ExitCode) => {
    process.once(signal, () => {
      report(`sluice: ${signal} received, stopping\n`);
      process.exit(code);
    });
  };
  handle('SIGINT', ExitCode.interrupted);
  handle('SIGTERM', ExitCode.terminated);
}
