import { JobFailedError } from '../core/index.ts';
import type { DeployedTask } from './task-deployment.ts';

/**
 * Runs tasks to completion. The first failure cancels every other task, so a failing job ends promptly with that
 * failure instead of hanging on a channel that will never be filled.
 */
export async function runTasks(tasks: readonly DeployedTask[]): Promise<void> {
  let failure: unknown;
  await Promise.all(
    tasks.map((task) =>
      task.run().catch((err: unknown) => {
        if (failure === undefined) {
          failure = err;
          for (const other of tasks) if (other !== task) other.cancel(err);
        }
      }),
    ),
  );
  if (failure !== undefined) {
    const reason = failure instanceof Error ? failure.message : String(failure);
    throw new JobFailedError(`job failed: ${reason}`, failure);
  }
}
