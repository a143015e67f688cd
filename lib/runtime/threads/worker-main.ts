import { parentPort, workerData } from 'node:worker_threads';
import { InternalError, systemClock } from '../../core/index.ts';
import { buildPhysicalPlan } from '../../graph/physical-plan.ts';
import { buildJob, loadJobModule } from '../load-job.ts';
import { NO_CHECKPOINTS } from '../checkpointing/participant.ts';
import { deployTasks } from '../task-deployment.ts';
import { memoryServices } from '../default-services.ts';
import { runTasks } from '../run-tasks.ts';
import { serializeError } from './remote-error.ts';
import type { WorkerInit, WorkerReport } from './protocol.ts';

/** One worker thread: rebuilds the job from its module and runs the subtasks assigned to this thread. */
async function main(init: WorkerInit): Promise<WorkerReport> {
  const job = await loadJobModule(init.modulePath);
  const env = await buildJob(job, init.flags, init.jobOptions);
  const plan = buildPhysicalPlan(env.graph, env.options);
  if (plan.fingerprint !== init.fingerprint) {
    throw new InternalError(
      `worker thread ${init.thread} built a different job graph than the coordinating thread: the job's build() must be deterministic (same operators and parallelism for the same flags)`,
    );
  }
  const tasks = deployTasks({
    plan,
    options: env.options,
    splits: new Map(init.splits),
    thread: init.thread,
    threadOf: (subtask) => subtask,
    ports: new Map(Object.entries(init.ports)),
    services: memoryServices(),
    clock: systemClock,
    checkpoints: NO_CHECKPOINTS,
    attempt: init.attempt,
  });
  await runTasks(tasks);
  return { type: 'done', metrics: tasks.map((t) => t.metrics) };
}

const init = workerData as WorkerInit;
let report: WorkerReport;
try {
  report = await main(init);
} catch (err) {
  // runTasks wraps the first task failure; report that task's error, not the wrapper.
  const cause = err instanceof Error && err.cause !== undefined && err.name === 'JobFailedError' ? err.cause : err;
  report = { type: 'failed', error: serializeError(cause) };
}
// Ports stay open: the coordinating thread stops every worker once all have reported, so no message in flight to a
// slower thread is cut off by this one closing its end.
parentPort!.postMessage(report);
