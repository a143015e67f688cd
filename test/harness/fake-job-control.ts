import type { CheckpointView, JobControl, JobDetails, JobStatus, SavepointView } from '../../lib/runtime/control/job-control.ts';

/** A JobControl with canned answers, recording the savepoint and stop requests it gets. */
export class FakeJobControl implements JobControl {
  readonly id: string;
  status: JobStatus = 'running';
  readonly requests: ('savepoint' | 'stop')[] = [];
  /** What the next savepoint or stop request does. */
  next: () => Promise<SavepointView> = async () => ({ checkpointId: 7, path: '/savepoints/savepoint-0000000007-1700000000000' });
  history: CheckpointView[] = [
    {
      id: 7,
      status: 'completed',
      savepoint: true,
      final: false,
      triggerTime: 1_700_000_000_000,
      durationMs: 12,
      sizeBytes: 4096,
      acknowledgedTasks: 3,
      totalTasks: 3,
      failureReason: null,
      path: '/savepoints/savepoint-0000000007-1700000000000',
    },
    {
      id: 6,
      status: 'failed',
      savepoint: false,
      final: false,
      triggerTime: 1_699_999_999_000,
      durationMs: 600_000,
      sizeBytes: 100,
      acknowledgedTasks: 1,
      totalTasks: 3,
      failureReason: 'checkpoint 6 expired',
      path: null,
    },
  ];

  constructor(
    readonly name = 'totals',
    id = 'job-1',
  ) {
    this.id = id;
  }

  overview() {
    return { id: this.id, name: this.name, status: this.status };
  }

  async details(): Promise<JobDetails> {
    return {
      ...this.overview(),
      startTime: 1_700_000_000_000,
      durationMs: 5000,
      parallelism: 2,
      workerThreads: 2,
      maxParallelism: 128,
      vertices: [{ id: 0, name: 'Source: generator', parallelism: 2 }],
      recordsRead: 1234,
      droppedLateRecords: 0,
      restarts: 0,
      checkpointing: { dir: '/ck', intervalMs: 1000, savepointDir: '/ck/savepoints' },
      restoredFrom: null,
      savepointPath: null,
    };
  }

  checkpoints(): CheckpointView[] {
    return this.history;
  }

  triggerSavepoint(): Promise<SavepointView> {
    this.requests.push('savepoint');
    return this.next();
  }

  stopWithSavepoint(): Promise<SavepointView> {
    this.requests.push('stop');
    return this.next();
  }
}
