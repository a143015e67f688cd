import { randomUUID } from 'node:crypto';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { JobFailedError } from '../../core/index.ts';
import type { JobOptions } from '../../api/job-options.ts';
import { buildPhysicalPlan } from '../../graph/physical-plan.ts';
import { buildJob, loadJobModule } from '../load-job.ts';
import { computeSplits } from '../in-thread-runner.ts';
import { crossThreadChannels } from '../task-deployment.ts';
import { summarize, type JobResult } from '../job-result.ts';
import type { TaskMetrics } from '../task-metrics.ts';
import { RemoteTaskError } from './remote-error.ts';
import type { WorkerInit, WorkerReport } from './protocol.ts';

export interface ThreadedRunOptions {
  /** Path of the job module (its default export is a defineJob(...) job). */
  modulePath: string;
  /** Parsed job flags, passed to build() in every thread. */
  flags: Record<string, unknown>;
  jobOptions: JobOptions;
}

const BOOTSTRAP = fileURLToPath(new URL('./worker-bootstrap.mjs', import.meta.url));

/**
 * Runs a job module on worker threads: subtask i of every operator runs on thread i (so parallelism N uses N
 * threads), with channels between threads over MessagePorts. The first failing task fails the job and every
 * thread is stopped.
 */
export async function runOnThreads(options: ThreadedRunOptions): Promise<JobResult> {
  const started = Date.now();
  const job = await loadJobModule(options.modulePath);
  const env = await buildJob(job, options.flags, options.jobOptions);
  const plan = buildPhysicalPlan(env.graph, env.options);
  const splits = await computeSplits(plan);
  const threads = Math.max(...plan.vertices.map((v) => v.parallelism));

  const portsOf: Record<string, MessagePort>[] = Array.from({ length: threads }, () => ({}));
  for (const ch of crossThreadChannels(plan, (s) => s)) {
    const { port1, port2 } = new MessageChannel();
    portsOf[ch.producer]![ch.key] = port1;
    portsOf[ch.consumer]![ch.key] = port2;
  }

  const attempt = randomUUID();
  const workers: Worker[] = [];
  const reports = Array.from({ length: threads }, (_, thread) => {
    const init: WorkerInit = {
      modulePath: options.modulePath,
      flags: options.flags,
      jobOptions: options.jobOptions,
      thread,
      attempt,
      fingerprint: plan.fingerprint,
      splits: [...splits.entries()],
      ports: portsOf[thread]!,
    };
    const worker = new Worker(BOOTSTRAP, {
      workerData: init,
      transferList: Object.values(portsOf[thread]!),
      // A larger young generation: batches are short-lived garbage, and scavenges dominate otherwise.
      resourceLimits: { maxYoungGenerationSizeMb: 16 },
    });
    workers.push(worker);
    return new Promise<TaskMetrics[]>((resolve, reject) => {
      let settled = false;
      worker.once('message', (report: WorkerReport) => {
        settled = true;
        if (report.type === 'done') resolve(report.metrics);
        else reject(new RemoteTaskError(report.error));
      });
      worker.once('error', (err) => {
        settled = true;
        reject(err);
      });
      worker.once('exit', (code) => {
        if (!settled) reject(new JobFailedError(`worker thread ${thread} exited with code ${code} before reporting`, undefined));
      });
    });
  });

  try {
    const metrics = await Promise.all(reports);
    return summarize(started, metrics.flat());
  } catch (err) {
    if (err instanceof JobFailedError) throw err;
    throw new JobFailedError(`job failed: ${err instanceof Error ? err.message : String(err)}`, err);
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
