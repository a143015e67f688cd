import { createHash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { InternalError, systemClock, type BarrierElement } from '../../core/index.ts';
import { buildPhysicalPlan } from '../../graph/physical-plan.ts';
import { openCheckpointStorage } from '../restore/open-checkpoint-storage.ts';
import { buildJob, loadJobModule } from '../load-job.ts';
import { NO_CHECKPOINTS, type CheckpointParticipant } from '../checkpoint-driver/participant.ts';
import { CheckpointHub } from '../checkpoint-driver/checkpoint-hub.ts';
import { loadRestoredJob } from '../restore/restore-plan.ts';
import { deployTasks, staticSplitEnumerator, verticesOn, type DeployedTask } from '../task-deployment.ts';
import { ThreadChannelFactory } from '../channels/thread-channel-factory.ts';
import { placementOf } from '../placement.ts';
import { createStateServices } from '../state-services.ts';
import { runTasks } from '../run-tasks.ts';
import { serializeError } from './remote-error.ts';
import { MessageAlignmentLink } from '../alignment/alignment-link.ts';
import type { CoordinatorMessage, WorkerInit, WorkerMessage } from './protocol.ts';
import { openSnapshotAt, registerStorageSchemes } from '../../storage/storage-locations.ts';

const port = parentPort!;
const post = (message: WorkerMessage): void => port.postMessage(message);

/** One worker thread: rebuilds the job from its module and runs the subtasks the placement puts on this thread. */
async function main(init: WorkerInit): Promise<WorkerMessage> {
  const job = await loadJobModule(init.modulePath);
  const env = await buildJob(job, init.flags, init.jobOptions);
  const plan = buildPhysicalPlan(env.graph, env.options);
  if (plan.fingerprint !== init.fingerprint) {
    throw new InternalError(
      `worker thread ${init.thread} built a different job graph than the coordinating thread: the job's build() must be deterministic (same operators and parallelism for the same flags)`,
    );
  }
  const placement = placementOf(init.placement);
  let tasks: DeployedTask[] = [];
  const early: BarrierElement[] = [];
  let checkpoints: CheckpointParticipant = NO_CHECKPOINTS;
  let restored;
  // One listener from the start: the port delivers messages as soon as any listener exists, so checkpoint messages
  // that arrive while the storage opens (an await) wait here instead of being dropped.
  const pending: CoordinatorMessage[] = [];
  let onCheckpointMessage: ((message: CoordinatorMessage) => void) | undefined;
  const alignment = new MessageAlignmentLink((group, member, watermark) => post({ type: 'alignment', group, member, watermark }));
  port.on('message', (message: CoordinatorMessage) => {
    if (message.type === 'metrics') post({ type: 'metrics', requestId: message.requestId, metrics: tasks.map((t) => t.metrics) });
    else if (message.type === 'alignment') alignment.deliver(message.group, message.minimum);
    else if (onCheckpointMessage === undefined) pending.push(message);
    else onCheckpointMessage(message);
  });
  if (init.checkpointDir !== undefined) {
    registerStorageSchemes(init.storageSchemes);
    const storage = await openCheckpointStorage(init.checkpointDir);
    const hub = new CheckpointHub(storage, {
      ack: (checkpointId, handle) => post({ type: 'ack', checkpointId, handle, fencing: init.fencing }),
      decline: (checkpointId, task, reason) => post({ type: 'decline', checkpointId, task, reason, fencing: init.fencing }),
      sourceFinished: (task) => post({ type: 'sourceFinished', task }),
    }, init.fencing);
    hub.onComplete((id) => {
      // The coordinating thread learns when the sinks committed (a stop-with-savepoint ends the job only then).
      void Promise.all(tasks.map((t) => t.notifyCheckpointComplete(id))).then(() => post({ type: 'notified', checkpointId: id }));
    });
    onCheckpointMessage = (message) => {
      if (message.type === 'metrics' || message.type === 'alignment') return;
      if (message.type === 'complete') hub.notifyComplete(message.checkpointId, message.final);
      // A trigger can arrive while this thread is still loading restored state: keep it for the tasks.
      else if (tasks.length === 0) early.push(message.barrier);
      else tasks.forEach((t) => t.triggerCheckpoint(message.barrier));
    };
    for (const message of pending.splice(0)) onCheckpointMessage(message);
    checkpoints = hub;
    if (init.restoreFrom !== undefined) {
      const mine = verticesOn(plan, placement, init.thread);
      const reader = init.restoreLocation === undefined ? storage : await openSnapshotAt(init.restoreLocation);
      restored = await loadRestoredJob(reader, init.restoreFrom, plan, mine);
    }
  }
  tasks = deployTasks({
    plan,
    options: env.options,
    worker: init.thread,
    placement,
    channels: new ThreadChannelFactory(init.thread, new Map(Object.entries(init.ports)), env.options.channelCapacity),
    splits: staticSplitEnumerator(plan, new Map(init.splits)),
    services: await createStateServices(init.stateBackend, jobKeyOf(plan.fingerprint)),
    clock: systemClock,
    checkpoints,
    fencing: init.fencing,
    restored,
    alignment,
  });
  for (const barrier of early) tasks.forEach((t) => t.triggerCheckpoint(barrier));
  await runTasks(tasks);
  return { type: 'done', metrics: tasks.map((t) => t.metrics) };
}

/** Names the job's folder under the state directory: the same job graph finds its local state again. */
function jobKeyOf(fingerprint: string): string {
  return `job-${createHash('sha256').update(fingerprint).digest('hex').slice(0, 16)}`;
}

const init = workerData as WorkerInit;
let report: WorkerMessage;
try {
  report = await main(init);
} catch (err) {
  // runTasks wraps the first task failure; report that task's error, not the wrapper.
  const cause = err instanceof Error && err.cause !== undefined && err.name === 'JobFailedError' ? err.cause : err;
  report = { type: 'failed', error: serializeError(cause) };
}
// Ports stay open: the coordinating thread stops every worker once all have reported, so no message in flight to a
// slower thread is cut off by this one closing its end.
post(report);
