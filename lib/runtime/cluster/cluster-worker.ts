import { ConfigError, isErrorCode, SluiceError, systemClock, type Clock } from '../../core/index.ts';
import type { ClusterConfigItem, ControlItem } from '../../cluster/control-items.ts';
import type { AckWriter, ControlReader, HeldSlot, LeaseEvent, SlotLeaseKeeper } from '../../cluster/ports.ts';
import type { CompiledJobOptions } from '../../contracts/job-options.ts';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';
import type { ObjectStore } from '../../storage/object-store.ts';
import type { KeyedServices } from '../operator-chain.ts';
import { LeaseLostError } from './slot-errors.ts';
import { SlotRunner, twoPhaseCommitSinks } from './slot-runner.ts';
import { prepareSlotDirs, type SlotDirs } from './slot-state-dirs.ts';
import { checkSlotPlan, edgeModes } from './slot-wiring.ts';
import type { ExchangeTransport } from '../../cluster/exchange/index.ts';
import type { WorkerEvent } from './worker-events.ts';

export interface ClusterWorkerOptions {
  /** How often the `control` item is read (consistent read). @default 500 */
  readonly controlPollMs?: number;
  /** First wait before a failed slot restarts; doubles per consecutive failure of the slot (the count resets once
   * the slot acks a checkpoint). @default 1000 */
  readonly restartDelayMs?: number;
  /** Longest wait between restarts of a failing slot. @default 30000 */
  readonly maxRestartDelayMs?: number;
}

export const CLUSTER_WORKER_DEFAULTS: Required<ClusterWorkerOptions> = Object.freeze({
  controlPollMs: 500,
  restartDelayMs: 1000,
  maxRestartDelayMs: 30_000,
});

export interface ClusterWorkerInit extends ClusterWorkerOptions {
  readonly jobId: string;
  readonly plan: PhysicalPlan;
  readonly jobOptions: CompiledJobOptions;
  readonly control: ControlReader;
  readonly acks: AckWriter;
  readonly leases: SlotLeaseKeeper;
  /** The checkpoint storage's objects (`--checkpoint-dir`). */
  readonly store: ObjectStore;
  /** `--state-dir`: RocksDB databases (EFS, or the task's disk). */
  readonly stateRoot: string;
  /** Local disk for temp files. */
  readonly tempRoot: string;
  /** Keyed state of one slot at one epoch, in its directories. */
  readonly services: (dirs: SlotDirs) => KeyedServices | Promise<KeyedServices>;
  /** The exchange data path; absent: a plan with an exchange edge is a ConfigError. */
  readonly exchange?: ExchangeTransport | undefined;
  /** Extra checks of the stored `config` against the job (the plan fingerprint). @default none */
  readonly verifyConfig?: ((config: ClusterConfigItem, plan: PhysicalPlan) => void) | undefined;
  readonly events: (event: WorkerEvent) => void;
  readonly clock?: Clock;
}

interface SlotEntry {
  held: HeldSlot;
  runner: SlotRunner | undefined;
  /** Consecutive failures of the slot: reset once it acked a checkpoint, not when it merely started (a slot that
   * fails right after every start would otherwise restart at the first, shortest delay forever). */
  failures: number;
  /** Lost, fenced, handed over or stopping: no restart. */
  ended: boolean;
  /** A handoff asked for before the runner existed: carried out once the slot started (the keeper does not ask twice). */
  handoffTo?: string;
  /** `startSlot` of this entry (it stops the runner itself when the entry ended meanwhile). */
  starting?: Promise<void>;
}

/**
 * A cluster worker's runtime: lease events drive slots (acquired -> start, restored from the latest completed
 * checkpoint; lost -> stop at once; handoffRequested -> stop at the next completed checkpoint, close the state,
 * hand over), one poll of `control` every controlPollMs feeds every slot (triggers, completions, halt), and a
 * failed slot restarts locally at a new epoch. `run` resolves after `stop` (SIGTERM) or a halt, once every slot
 * stopped and its lease was released.
 */
export class ClusterWorker {
  private readonly options: Required<ClusterWorkerOptions>;
  private readonly slots = new Map<number, SlotEntry>();
  /**
   * Per slot: settles once the previous runner of the slot in this process ended and closed its state. A slot taken
   * again here (lost and reclaimed, restarted) waits for it: its directory is renamed to the new epoch and RocksDB
   * opened again, which a database still open in this process does not refuse (its lock only works across processes).
   */
  private readonly retiring = new Map<number, Promise<void>>();
  private config: ClusterConfigItem | undefined;
  private stopping: Promise<void> | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private finish: () => void = () => {};
  private fail: (err: unknown) => void = () => {};

  constructor(private readonly init: ClusterWorkerInit) {
    this.options = {
      controlPollMs: init.controlPollMs ?? CLUSTER_WORKER_DEFAULTS.controlPollMs,
      restartDelayMs: init.restartDelayMs ?? CLUSTER_WORKER_DEFAULTS.restartDelayMs,
      maxRestartDelayMs: init.maxRestartDelayMs ?? CLUSTER_WORKER_DEFAULTS.maxRestartDelayMs,
    };
  }

  /** Checks the stored config, then takes leases and runs slots until stopped or halted. */
  async run(): Promise<void> {
    const ended = new Promise<void>((resolve, reject) => {
      this.finish = resolve;
      this.fail = reject;
    });
    const config = await this.init.control.readConfig();
    if (config === undefined) {
      throw new ConfigError(`job ${this.init.jobId} has no config item in the control table: deploy it first with \`sluice aws init\``);
    }
    checkSlotPlan(this.init.plan, config.parallelism);
    edgeModes(this.init.plan, config.edges);
    twoPhaseCommitSinks(this.init.plan);
    if (config.maxParallelism !== this.init.plan.maxParallelism) {
      throw new ConfigError(`the stored config has maxParallelism ${config.maxParallelism}, the job ${this.init.plan.maxParallelism}: run the job that was deployed`);
    }
    this.init.verifyConfig?.(config, this.init.plan);
    this.config = config;
    // A halted job stays halted: taking leases would bump the lease generation and restore slots only to stop
    // them at the first poll (and ECS would start the task again, and again).
    const control = await this.init.control.readControl();
    if (control?.halted !== undefined) {
      this.emit({ event: 'warning', message: `job ${this.init.jobId} is halted (stopped at savepoint ${control.halted.savepointPath}): nothing to run` });
      return;
    }
    this.init.leases.start((event) => this.onLease(event));
    this.schedulePoll();
    return ended;
  }

  /** SIGTERM: stops every slot, releases its lease, stops taking leases. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      if (this.pollTimer !== undefined) clearTimeout(this.pollTimer);
      await Promise.all([...this.slots.values()].map((entry) => this.stopAndRelease(entry)));
      await this.init.leases.close();
      this.finish();
    })();
    return this.stopping;
  }

  private onLease(event: LeaseEvent): void {
    const { slot, epoch } = event;
    switch (event.kind) {
      case 'acquired': {
        this.emit({ event: 'lease-acquired', slot, epoch, ...(event.previousOwner === undefined ? {} : { previousOwner: event.previousOwner }) });
        const entry: SlotEntry = { held: { slot, epoch }, runner: undefined, failures: 0, ended: false };
        if (this.stopping !== undefined) {
          void this.init.leases.release(entry.held).catch((err: unknown) => this.warn(`releasing slot ${slot}: ${message(err)}`, slot));
          return;
        }
        this.slots.set(slot, entry);
        this.begin(entry);
        return;
      }
      case 'lost': {
        this.emit({ event: 'lease-lost', slot, epoch, reason: event.reason });
        const entry = this.slots.get(slot);
        if (entry === undefined) return;
        entry.ended = true;
        this.slots.delete(slot);
        entry.runner?.stopNow(new LeaseLostError(slot, epoch, event.reason));
        this.retire(entry);
        return;
      }
      case 'handoffRequested': {
        const entry = this.slots.get(slot);
        if (entry === undefined || entry.ended) return;
        if (entry.runner === undefined) entry.handoffTo = event.to;
        else this.handOff(entry, entry.runner, event.to);
        return;
      }
    }
  }

  /** Stops the slot at its next completed checkpoint (state closed), then hands the lease over. */
  private handOff(entry: SlotEntry, runner: SlotRunner, to: string): void {
    const { slot } = entry.held;
    entry.ended = true;
    void runner
      .stopAtNextCompletedCheckpoint()
      .then(() => this.init.leases.handOver(entry.held))
      .then(() => {
        this.slots.delete(slot);
        this.emit({ event: 'released', slot, epoch: entry.held.epoch, to });
      })
      .catch((err: unknown) => this.warn(`handing slot ${slot} over to ${to} failed: ${message(err)}`, slot));
  }

  private begin(entry: SlotEntry): void {
    entry.starting = this.startSlot(entry);
  }

  /** Remembers until when the entry's runner still has the slot's state open (see `retiring`). */
  private retire(entry: SlotEntry): void {
    const slot = entry.held.slot;
    const before = this.retiring.get(slot);
    const closed = Promise.all([before, entry.starting])
      .then(() => entry.runner?.stop())
      .catch(() => undefined);
    this.retiring.set(slot, closed);
    void closed.then(() => {
      if (this.retiring.get(slot) === closed) this.retiring.delete(slot);
    });
  }

  private async startSlot(entry: SlotEntry): Promise<void> {
    const { slot, epoch } = entry.held;
    try {
      await this.retiring.get(slot);
      if (entry.ended) return;
      const control = await this.init.control.readControl();
      const dirs = await prepareSlotDirs({ stateRoot: this.init.stateRoot, tempRoot: this.init.tempRoot, jobId: this.init.jobId, slot, epoch });
      if (entry.ended) return;
      const runner = new SlotRunner({
        plan: this.init.plan,
        jobOptions: this.init.jobOptions,
        config: this.config!,
        slot,
        epoch,
        attempt: entry.failures,
        owner: this.init.leases.workerId,
        store: this.init.store,
        acks: this.init.acks,
        services: await this.init.services(dirs),
        control,
        exchange: this.init.exchange,
        clock: this.init.clock ?? systemClock,
        events: {
          acked: (item) => {
            // A decline is no sign of health: the slot may be failing its snapshots.
            if (item.kind === 'ack') entry.failures = 0;
            this.emit({ event: 'ack', slot, epoch, checkpointId: item.checkpointId, kind: item.kind });
          },
          fenced: (what) => {
            entry.ended = true;
            this.emit({ event: 'fenced', slot, epoch, what });
          },
          warn: (line) => this.warn(line, slot),
        },
      });
      entry.runner = runner;
      // Stopped (SIGTERM, lost) while the slot's directories and state were being prepared.
      if (entry.ended) {
        await runner.stop();
        return;
      }
      void runner.done.catch((err: unknown) => this.slotFailed(entry, err));
      const started = await runner.start();
      this.emit({ event: 'slot-started', slot, epoch, restore: started.restore, ms: started.ms, ...(started.checkpointId === undefined ? {} : { checkpointId: started.checkpointId }) });
      if (entry.handoffTo !== undefined && !entry.ended) this.handOff(entry, runner, entry.handoffTo);
    } catch (err) {
      await entry.runner?.stop();
      this.slotFailed(entry, err);
    }
  }

  /** A failed slot restarts on this worker at a new epoch (one transaction), after a growing pause. */
  private slotFailed(entry: SlotEntry, err: unknown): void {
    if (entry.ended || this.stopping !== undefined || this.slots.get(entry.held.slot) !== entry) return;
    const { slot, epoch } = entry.held;
    entry.ended = true;
    this.retire(entry);
    const lasting = lastingCause(err);
    const failure = lasting ?? err;
    const code = failure instanceof Error && 'code' in failure && isErrorCode((failure as { code: unknown }).code) ? (failure as { code: string }).code : undefined;
    const fatal = isFatal(err) || lasting !== undefined;
    const delay = Math.min(this.options.maxRestartDelayMs, this.options.restartDelayMs * 2 ** entry.failures);
    this.emit({ event: 'slot-failed', slot, epoch, error: message(err), ...(code === undefined ? {} : { code }), ...(fatal ? {} : { restartInMs: delay }) });
    if (fatal) {
      this.fail(failure);
      return;
    }
    setTimeout(() => {
      if (this.stopping !== undefined || this.slots.get(slot) !== entry) return;
      this.init.leases.restartLocally(entry.held).then(
        (held) => {
          const next: SlotEntry = { held, runner: undefined, failures: entry.failures + 1, ended: false };
          this.slots.set(slot, next);
          this.begin(next);
        },
        (cause: unknown) => {
          // The lease moved on meanwhile: the keeper reports it lost; nothing more to do here.
          this.slots.delete(slot);
          this.emit({ event: 'fenced', slot, epoch, what: `restart (${message(cause)})` });
        },
      );
    }, delay).unref();
  }

  private async stopAndRelease(entry: SlotEntry): Promise<void> {
    entry.ended = true;
    await entry.runner?.stop();
    try {
      await this.init.leases.release(entry.held);
      this.emit({ event: 'released', slot: entry.held.slot, epoch: entry.held.epoch });
    } catch (err) {
      this.warn(`releasing slot ${entry.held.slot}: ${message(err)}`, entry.held.slot);
    }
    this.slots.delete(entry.held.slot);
  }

  private schedulePoll(): void {
    if (this.stopping !== undefined) return;
    this.pollTimer = setTimeout(() => void this.poll(), this.options.controlPollMs);
  }

  private async poll(): Promise<void> {
    let control: ControlItem | undefined;
    try {
      control = await this.init.control.readControl();
    } catch (err) {
      this.warn(`reading the control item failed: ${message(err)}`);
    }
    if (control !== undefined) {
      // A slot being handed over still needs the completion it stops at; a stopped runner ignores the rest.
      for (const entry of this.slots.values()) entry.runner?.onControl(control);
      if (control.halted !== undefined && this.stopping === undefined) {
        await this.stop();
        return;
      }
    }
    this.schedulePoll();
  }

  private warn(message: string, slot?: number): void {
    this.emit({ event: 'warning', message, ...(slot === undefined ? {} : { slot }) });
  }

  private emit(event: WorkerEvent): void {
    this.init.events(event);
  }
}

/** A job that cannot run in a cluster fails the same way at every restart: the worker fails instead of looping. */
function isFatal(err: unknown): boolean {
  return err instanceof ConfigError;
}

/** Failures that a restart does not heal, found anywhere in the cause chain (a task wraps what its operator threw). */
const LASTING_CODES: ReadonlySet<string> = new Set(['KEY_GROUP_MISMATCH']);

/** The first error of the chain whose code says a restart would fail the same way (the source reads the record again). */
function lastingCause(err: unknown): SluiceError | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    if (e instanceof SluiceError && LASTING_CODES.has(e.code)) return e;
  }
  return undefined;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
