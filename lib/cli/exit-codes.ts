/** Process exit codes of the `sluice` command. */
export const ExitCode = {
  /** The job finished (or help was shown). */
  ok: 0,
  /** The job started and failed. */
  jobFailed: 1,
  /** Bad usage or configuration: the job did not start. */
  usage: 2,
  /** Stopped by SIGINT (128 + 2). */
  interrupted: 130,
  /** Stopped by SIGTERM (128 + 15). */
  terminated: 143,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
