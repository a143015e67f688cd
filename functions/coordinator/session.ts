import { CheckpointCoordinator, type CoordinatorStep } from '../../lib/checkpoint/coordinator.ts';
import { compileCoordinatorOptions, type CompiledCoordinatorOptions } from '../../lib/checkpoint/coordinator-options.ts';
import type { CoordinatorCommand } from '../../lib/checkpoint/coordinator-protocol.ts';
import { checkpointDirName, metadataPath, parseSharedFilePath, SHARED_DIR_NAME } from '../../lib/checkpoint/naming.ts';
import type { CheckpointMetadata } from '../../lib/checkpoint/types.ts';
import type { ClusterConfigItem, ControlItem, CoordinatorItem, SlotCommittablesRef } from '../../lib/cluster/control-items.ts';
import { applyAcks, controlTriggerFor, requestItemOf, splitCommands } from '../../lib/cluster/coordinator-cycle.ts';
import { ClusterControlError, CoordinatorSupersededError } from '../../lib/cluster/coordinator-errors.ts';
import { collectableSharedFiles } from '../../lib/cluster/shared-file-collection.ts';
import { ConfigError, InternalError } from '../../lib/core/index.ts';
import { commitCheckpointSinks } from '../../lib/connectors/aws/cluster/checkpoint-sink-commits.ts';
import { CoordinatorControlTable } from '../../lib/connectors/aws/cluster/coordinator-control-table.ts';
import type { ExternalCommitter } from '../../lib/connectors/aws/cluster/sink-commit-registry.ts';
import { DynamoDbCommitPoint } from '../../lib/connectors/aws/s3/dynamodb-commit-point.ts';
import { openS3CheckpointStorage, openSavepointStorage } from '../../lib/connectors/aws/s3/open-s3-checkpoint-storage.ts';
import type { S3CheckpointStorage } from '../../lib/connectors/aws/s3/s3-checkpoint-storage.ts';
import { parseS3Uri } from '../../lib/connectors/aws/s3/s3-location.ts';
import { sha256Hex } from '../../lib/storage/fs/durable-fs.ts';
import { decodeMetadata, encodeMetadata } from '../../lib/storage/metadata-codec.ts';
import type { ObjectSavepointStorage } from '../../lib/storage/object-savepoint-storage.ts';
import type { CoordinatorSettings } from './settings.ts';

/** The savepoint area beside the checkpoints, as the embedded runner keeps it (`<dir>/savepoints`). */
function savepointUri(checkpointDir: string): string {
  const { bucket, prefix } = parseS3Uri(checkpointDir);
  return `s3://${bucket}/${prefix === '' ? '' : `${prefix}/`}savepoints`;
}

/** The metadata bytes of a pending commit, staged in the checkpoint's folder before the commit is tried. */
const STAGED_METADATA_NAME = '_metadata.pending';

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * One handler invocation's view of the coordinator: the `coordinator` item it read (and owns, or it is superseded)
 * and everything it needs to carry out the pure coordinator's commands. Every step is persisted (state, the commands
 * still to carry out, the exact metadata of a commit) before anything outside happens, so a handler that dies
 * anywhere leaves the next one (the retry, or the next state) to finish the same work; each command is idempotent.
 */
export class CoordinatorSession {
  private committers = new Map<number, ExternalCommitter>();

  private constructor(
    readonly settings: CoordinatorSettings,
    readonly table: CoordinatorControlTable,
    readonly config: ClusterConfigItem,
    readonly storage: S3CheckpointStorage,
    private readonly commitPoint: DynamoDbCommitPoint,
    private readonly savepoints: ObjectSavepointStorage,
    readonly options: CompiledCoordinatorOptions,
    readonly execution: string,
    private item: CoordinatorItem | undefined,
  ) {}

  /** The control table of the job in `settings`. */
  static tableOf(settings: CoordinatorSettings): CoordinatorControlTable {
    return new CoordinatorControlTable(settings.dynamo, settings.controlTable, settings.jobId);
  }

  /**
   * Reads `config` and the `coordinator` item. Without `claim` the item must exist and belong to `execution`
   * (CoordinatorSupersededError otherwise). Undefined when there is no `config` yet.
   */
  static async open(settings: CoordinatorSettings, execution: string, options: { claim?: boolean } = {}): Promise<CoordinatorSession | undefined> {
    const table = CoordinatorSession.tableOf(settings);
    const [config, item] = await Promise.all([table.readConfig(), table.readCoordinator()]);
    if (config === undefined) return undefined;
    if (options.claim !== true) {
      if (item === undefined) throw new ClusterControlError(`the coordinator item of job ${settings.jobId} does not exist yet: Recover creates it`);
      if (item.execution !== execution) throw new CoordinatorSupersededError(execution, item.execution);
    }
    const dir = settings.checkpointDir ?? config.checkpointDir;
    const storage = openS3CheckpointStorage(dir, { s3Client: settings.s3, dynamoDbClient: settings.dynamo, commitMode: 'dynamodb' });
    const commitPoint = storage.catalog.commitPoint;
    if (!(commitPoint instanceof DynamoDbCommitPoint)) throw new ConfigError(`the cluster's checkpoint storage ${dir} needs a DynamoDB commit table`);
    const savepoints = openSavepointStorage(savepointUri(dir), { s3Client: settings.s3 });
    const compiled = compileCoordinatorOptions({ intervalMs: 60_000, ...config.checkpointing } as Parameters<typeof compileCoordinatorOptions>[0]);
    return new CoordinatorSession(settings, table, config, storage, commitPoint, savepoints, compiled, execution, item);
  }

  /** Completed checkpoints (or a stop's savepoint) whose sinks are not committed yet. */
  sinksPending(): boolean {
    return (this.item?.sinkCommits ?? []).length > 0;
  }

  get coordinatorItem(): CoordinatorItem | undefined {
    return this.item;
  }

  get coordinator(): CheckpointCoordinator {
    if (this.item === undefined) throw new InternalError('the coordinator item was not created');
    return CheckpointCoordinator.resume(this.options, this.item.state);
  }

  private now(): number {
    return this.settings.now();
  }

  private log(event: Record<string, unknown>): void {
    this.settings.log({ jobId: this.settings.jobId, execution: this.execution, ...event });
  }

  private async save(next: Omit<CoordinatorItem, 'version' | 'execution'>, claim = false): Promise<void> {
    const item: CoordinatorItem = { ...next, version: 0, execution: this.execution };
    this.item = await this.table.writeCoordinator(item, this.item?.version, { claim });
  }

  /**
   * Recover's first step: take the item over for this execution (the newest supervisor execution owns the job),
   * creating the coordinator from the checkpoints in storage when there is none, or when the last one stopped or
   * its halted job was resumed.
   */
  async claim(): Promise<void> {
    const existing = this.item;
    // A halted coordinator whose job was resumed since (`control.resumed` written with `halted` removed): start a
    // new one, as after a stop. A halt always writes `control.halted` before the coordinator's state says halted.
    const haltedControl = existing?.state.status === 'halted' ? await this.table.readControl() : undefined;
    const resumed = haltedControl !== undefined && haltedControl.halted === undefined && haltedControl.resumed !== undefined;
    if (existing !== undefined && existing.state.status !== 'stopped' && !resumed) {
      await this.save(existing, true);
      return;
    }
    const stored = await this.storage.list();
    const complete = stored.filter((c) => c.status === 'complete').map((c) => c.checkpointId).sort((a, b) => a - b);
    const control = await this.table.readControl();
    const lastCheckpointId = Math.max(0, existing?.state.lastCheckpointId ?? 0, control.trigger?.checkpointId ?? 0, ...stored.map((c) => c.checkpointId));
    const coordinator = CheckpointCoordinator.start(this.options, {
      tasks: this.config.tasks,
      maxParallelism: this.config.maxParallelism,
      now: this.now(),
      lastCheckpointId,
      retainedCheckpointIds: complete.slice(-this.options.retain),
      ...(existing === undefined ? {} : { history: existing.state.history }),
      sourceTasks: this.config.sourceTasks,
    });
    const { state: _s, outbox: _o, pendingCommit: _p, inFlightCommittables: _i, ...kept } = existing ?? {};
    await this.save({ ...kept, state: coordinator.state }, true);
    this.log({ event: 'coordinator-started', lastCheckpointId, retained: coordinator.retainedCheckpointIds });
  }

  /** Persists `step` (its commands as the outbox, a metadata write as `pendingCommit`), then carries it out. */
  async follow(step: CoordinatorStep, changes: Partial<Pick<CoordinatorItem, 'requests' | 'inFlightCommittables'>> = {}): Promise<void> {
    const item = this.require();
    const { write, outbox } = splitCommands(step.commands);
    let pendingCommit = item.pendingCommit;
    if (write !== undefined) {
      const control = await this.table.readControl();
      const trigger = control.trigger;
      if (trigger?.checkpointId !== write.metadata.checkpointId) {
        throw new InternalError(`checkpoint ${write.metadata.checkpointId} is to be committed, but control.trigger is ${JSON.stringify(trigger)}`);
      }
      const bytes = encodeMetadata(write.metadata);
      const staged = { path: `${checkpointDirName(write.metadata.checkpointId)}/${STAGED_METADATA_NAME}`, bytes: bytes.byteLength, sha256: await sha256Hex(bytes) };
      await this.storage.store.put(staged.path, bytes);
      pendingCommit = { checkpointId: write.metadata.checkpointId, staged, leaseGeneration: trigger.leaseGeneration, ...(write.kind === 'writeSavepoint' ? { savepoint: true } : {}) };
    }
    const unchanged =
      write === undefined && outbox.length === 0 && Object.keys(changes).length === 0 && JSON.stringify(step.coordinator.state) === JSON.stringify(item.state);
    // An idle tick changes nothing: no write (the cycle's most frequent call).
    if (unchanged) return this.settle();
    await this.save({
      ...item,
      ...changes,
      state: step.coordinator.state,
      outbox: [...(item.outbox ?? []), ...outbox],
      ...(pendingCommit === undefined ? {} : { pendingCommit }),
    });
    await this.settle();
  }

  private require(): CoordinatorItem {
    if (this.item === undefined) throw new InternalError('the coordinator item was not created');
    return this.item;
  }

  /**
   * Finishes whatever the item says is under way: the commands of the outbox, a pending metadata commit (the
   * persisted bytes, committed or refused: never aborted once committed), a stop being prepared. Loops because each
   * may lead to another step.
   */
  async settle(): Promise<void> {
    for (let round = 0; round < 16; round++) {
      const item = this.require();
      if ((item.outbox ?? []).length > 0) {
        const answered = await this.execute(item.outbox ?? []);
        const { outbox: _done, requests, ...rest } = this.require();
        // A request answered for good is never taken again (it is not `queued`): its entry goes, so the map does
        // not grow with every savepoint or stop ever taken.
        const kept = Object.entries(requests ?? {}).filter(([, id]) => !answered.has(id));
        await this.save({ ...rest, ...(kept.length === 0 ? {} : { requests: Object.fromEntries(kept) }) });
        continue;
      }
      if (item.pendingCommit !== undefined) {
        await this.finishCommit(item, item.pendingCommit);
        continue;
      }
      const stopping = item.state.stopping;
      if (stopping !== undefined) {
        const path = this.savepointPath(stopping.checkpointId);
        await this.table.setHalted(stopping.checkpointId, path);
        await this.applyStep(this.coordinator.stopPrepared(stopping.checkpointId, this.now()));
        continue;
      }
      return;
    }
    throw new InternalError('the coordinator did not settle after 16 steps');
  }

  /** Like `follow`, for steps taken inside `settle` (which then loops). */
  private async applyStep(step: CoordinatorStep, changes: Partial<Omit<CoordinatorItem, 'version' | 'execution' | 'state'>> = {}): Promise<void> {
    const item = this.require();
    const { write, outbox } = splitCommands(step.commands);
    if (write !== undefined) throw new InternalError(`a ${write.kind} command arrived while settling a commit`);
    await this.save({ ...item, ...changes, state: step.coordinator.state, outbox: [...(item.outbox ?? []), ...outbox] });
  }

  private async finishCommit(item: CoordinatorItem, pending: NonNullable<CoordinatorItem['pendingCommit']>): Promise<void> {
    const id = pending.checkpointId;
    const bytes = await this.pendingBytes(pending);
    const metadata = decodeMetadata(bytes, `the pending commit of checkpoint ${id}`, id);
    let outcome: 'committed' | 'refused';
    let reason = '';
    try {
      if (pending.savepoint === true) {
        outcome = await this.writeSavepoint(metadata, pending.leaseGeneration);
        reason = 'a slot was taken over while the savepoint was in flight (lease generation moved)';
      } else {
        const path = metadataPath({ kind: 'checkpoint', checkpointId: id });
        // `control.completed` moves in the same transaction (not later from the outbox): a slot taken over after
        // the commit must restore this checkpoint, never the previous one.
        outcome = await this.commitPoint.commitConditioned(id, path, bytes, await sha256Hex(bytes), [
          this.table.completeOnGeneration(pending.leaseGeneration, id, path),
        ]);
        reason = `a slot was taken over while checkpoint ${id} was in flight (lease generation is no longer ${pending.leaseGeneration})`;
      }
    } catch (error) {
      // A committed record may exist: never abort on an error, retry (the handler's Retry, or the next state).
      this.log({ event: 'metadata-commit-failed', checkpointId: id, error: message(error) });
      throw error;
    }
    const { pendingCommit: _p, inFlightCommittables, ...rest } = item;
    const refs = Object.entries(inFlightCommittables?.checkpointId === id ? inFlightCommittables.bySlot : {})
      .sort(([a], [b]) => Number(a) - Number(b))
      .map(([, ref]) => ref);
    const coordinator = this.coordinator;
    if (outcome === 'refused') {
      await this.saveStep(rest, coordinator.abort(id, reason, this.now()));
      return;
    }
    const savepointStop = pending.savepoint === true && this.isStopSavepoint(id);
    const sinkCommits = [...(item.sinkCommits ?? [])];
    if ((pending.savepoint !== true || savepointStop) && !sinkCommits.some((c) => c.checkpointId === id)) sinkCommits.push({ checkpointId: id, refs });
    this.log({ event: pending.savepoint === true ? 'savepoint-written' : 'checkpoint-completed', checkpointId: id, slots: refs.length });
    // A savepoint has its own copies now; its staging files in checkpoint storage go, as the embedded runner's do
    // (a stop's only once its committables are committed: CommitSinks removes them).
    const staging: CoordinatorCommand[] = pending.savepoint === true && !savepointStop ? [{ kind: 'discard', checkpointIds: [id] }] : [];
    await this.saveStep({ ...rest, sinkCommits, outbox: [...(rest.outbox ?? []), ...staging] }, coordinator.metadataCommitted(id, this.now()));
  }

  /** The exact metadata bytes of a pending commit: the staged object (checked against its sha256), or inline. */
  private async pendingBytes(pending: NonNullable<CoordinatorItem['pendingCommit']>): Promise<Uint8Array> {
    if (pending.metadataJson !== undefined) return new Uint8Array(Buffer.from(pending.metadataJson, 'utf8'));
    const staged = pending.staged;
    const bytes = staged === undefined ? undefined : await this.storage.store.get(staged.path);
    if (staged === undefined || bytes === undefined || (await sha256Hex(bytes)) !== staged.sha256) {
      throw new ClusterControlError(`the staged metadata of checkpoint ${pending.checkpointId} (${String(staged?.path)}) is missing or does not match its sha256`);
    }
    return bytes;
  }

  private async saveStep(base: Omit<CoordinatorItem, 'version' | 'execution' | 'state'>, step: CoordinatorStep): Promise<void> {
    const { write, outbox } = splitCommands(step.commands);
    if (write !== undefined) throw new InternalError(`a ${write.kind} command arrived while finishing a commit`);
    await this.save({ ...base, state: step.coordinator.state, outbox: [...(base.outbox ?? []), ...outbox] });
  }

  private isStopSavepoint(checkpointId: number): boolean {
    const f = this.require().state.inFlight;
    return f?.checkpointId === checkpointId && f.savepointRequestId !== undefined && (this.require().state.stopRequests ?? []).includes(f.savepointRequestId);
  }

  /** A savepoint is not a checkpoint to restore from: it is written whole, then the generation is checked once more. */
  private async writeSavepoint(metadata: CheckpointMetadata, leaseGeneration: number): Promise<'committed' | 'refused'> {
    if ((await this.table.readControl()).leaseGeneration !== leaseGeneration) return 'refused';
    await this.savepoints.write(metadata, this.storage);
    if ((await this.table.readControl()).leaseGeneration !== leaseGeneration) return 'refused';
    return 'committed';
  }

  private savepointPath(checkpointId: number): string {
    const entry = this.require().state.history.find((h) => h.checkpointId === checkpointId);
    return this.savepoints.pathOf({ checkpointId, triggeredAt: entry?.triggeredAt ?? 0 });
  }

  /**
   * Carries out commands that need no answer; each is idempotent, as the outbox may be replayed. Returns the
   * savepoint request ids answered with a final status.
   */
  private async execute(commands: readonly CoordinatorCommand[]): Promise<Set<number>> {
    const requests = this.require().requests;
    const now = this.now();
    const answered = new Set<number>();
    const request = async (requestId: number, update: Parameters<CoordinatorControlTable['updateRequest']>[1]): Promise<void> => {
      const id = requestItemOf(requests, requestId);
      if (id !== undefined) await this.table.updateRequest(id, update, now);
      answered.add(requestId);
    };
    for (const command of commands) {
      switch (command.kind) {
        case 'trigger':
          await this.ensureTrigger();
          break;
        case 'notifyComplete':
          // Checkpoints only: a stop's savepoint is announced by `halted`, which `settle` wrote before this.
          if (this.require().state.retained.includes(command.checkpointId)) {
            await this.table.setCompleted(command.checkpointId, metadataPath({ kind: 'checkpoint', checkpointId: command.checkpointId }));
          }
          await this.table.deleteAcksThrough(command.checkpointId);
          break;
        case 'discard':
          for (const id of command.checkpointIds) await this.storage.discard(id);
          break;
        case 'abort':
          this.log({ event: 'checkpoint-aborted', checkpointId: command.checkpointId, reason: command.reason });
          await this.storage.discard(command.checkpointId);
          await this.table.deleteAcksThrough(command.checkpointId);
          break;
        case 'savepointComplete':
          await request(command.requestId, { status: 'succeeded', result: { checkpointId: command.checkpointId, path: this.savepointPath(command.checkpointId) } });
          await this.table.deleteAcksThrough(command.checkpointId);
          break;
        case 'halt':
          await request(command.requestId, { status: 'succeeded', result: { checkpointId: command.checkpointId, path: this.savepointPath(command.checkpointId) } });
          await this.table.deleteAcksThrough(command.checkpointId);
          break;
        case 'savepointFailed':
          await request(command.requestId, { status: 'failed', error: command.reason });
          break;
        case 'savepointRejected':
          await request(command.requestId, { status: 'failed', error: command.reason });
          break;
        case 'savepointNotStopped':
          await request(command.requestId, { status: 'failed', error: `the savepoint was taken but the job did not stop: ${command.reason}` });
          break;
        case 'failJob':
          this.log({ event: 'checkpointing-failed', failures: command.failures, tolerated: command.tolerated, reason: command.reason });
          break;
        case 'prepareStop':
          // Carried out by `settle` from `state.stopping`, which this step persisted.
          break;
        case 'commitMetadata':
        case 'writeSavepoint':
          throw new InternalError(`${command.kind} belongs in pendingCommit, not in the outbox`);
      }
    }
    return answered;
  }

  /**
   * Makes `control.trigger` name the checkpoint in flight, with the lease generation current when it is written.
   * Not before the previous checkpoint's sinks are committed: then it stays unwritten until CommitSinks catches up.
   */
  async ensureTrigger(): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const control: ControlItem = await this.table.readControl();
      const trigger = controlTriggerFor(this.require().state, control.leaseGeneration);
      if (trigger === undefined || (control.trigger?.checkpointId ?? -1) >= trigger.checkpointId) return;
      const result = await this.table.setTrigger(trigger);
      if (result === 'written') this.log({ event: 'triggered', checkpointId: trigger.checkpointId, savepoint: trigger.savepoint, leaseGeneration: trigger.leaseGeneration });
      if (result !== 'generationMoved') return;
    }
    throw new ClusterControlError('the lease generation kept moving while the trigger was written; retry');
  }

  /** Applies the in-flight checkpoint's ack items (one Query), then ticks (timeouts). */
  async collectAcks(): Promise<number> {
    const coordinator = this.coordinator;
    const inFlight = coordinator.inFlight;
    if (inFlight === undefined || inFlight.phase !== 'acknowledging') {
      await this.follow(coordinator.tick(this.now()));
      return 0;
    }
    // A slot was taken over since the trigger was written: the commit would be refused, so waiting for the acks
    // (the slot's new owner never acks a trigger it found at its start) only ends at the timeout. Abort now; the
    // next trigger carries the new generation.
    const control = await this.table.readControl();
    if (control.trigger?.checkpointId === inFlight.checkpointId && control.trigger.leaseGeneration !== control.leaseGeneration) {
      const reason = `a slot was taken over while checkpoint ${inFlight.checkpointId} was in flight (lease generation ${control.trigger.leaseGeneration} -> ${control.leaseGeneration})`;
      await this.follow(coordinator.abort(inFlight.checkpointId, reason, this.now()));
      return 0;
    }
    const acks = await this.table.acks(inFlight.checkpointId);
    const now = this.now();
    // Refs kept for an earlier checkpoint (aborted) do not count for this one.
    const kept = this.require().inFlightCommittables;
    const known = kept?.checkpointId === inFlight.checkpointId ? kept.bySlot : {};
    const applied = applyAcks(coordinator, acks, now, known);
    const ticked = applied.coordinator.tick(now);
    const changes =
      kept?.checkpointId === inFlight.checkpointId && JSON.stringify(applied.committables) === JSON.stringify(known)
        ? {}
        : { inFlightCommittables: { checkpointId: inFlight.checkpointId, bySlot: applied.committables } };
    await this.follow({ coordinator: ticked.coordinator, commands: [...applied.commands, ...ticked.commands] }, changes);
    return acks.length;
  }

  /**
   * Commits sinks checkpoint by checkpoint, moving `sinkCommittedThrough` after each. Returns the ids committed.
   * Idempotent at every point: an entry at or below `sinkCommittedThrough` is committed already (a handler died
   * before removing it) and is only removed; a stop savepoint's staging folder is discarded from the outbox saved
   * with the removal, so no repeat can find the entry still listed and its committables gone.
   */
  async commitSinks(): Promise<number[]> {
    const done: number[] = [];
    let committedThrough = (await this.table.readControl()).sinkCommittedThrough;
    for (;;) {
      const next = this.require().sinkCommits?.[0];
      if (next === undefined) return done;
      let handed = 0;
      if (next.checkpointId > committedThrough) {
        handed = await this.commitSinksOf(next.checkpointId, next.refs);
        await this.table.setSinkCommittedThrough(next.checkpointId);
        committedThrough = next.checkpointId;
      }
      const item = this.require();
      // A stop's savepoint (not a retained checkpoint): its staging files are not needed any more.
      const staging: CoordinatorCommand[] = item.state.retained.includes(next.checkpointId) ? [] : [{ kind: 'discard', checkpointIds: [next.checkpointId] }];
      await this.save({
        ...item,
        sinkCommits: (item.sinkCommits ?? []).filter((c) => c.checkpointId !== next.checkpointId),
        ...(staging.length === 0 ? {} : { outbox: [...(item.outbox ?? []), ...staging] }),
      });
      this.log({ event: 'sinks-committed', checkpointId: next.checkpointId, committables: handed });
      if (staging.length > 0) await this.settle();
      done.push(next.checkpointId);
    }
  }

  private commitSinksOf(checkpointId: number, refs: readonly SlotCommittablesRef[]): Promise<number> {
    return commitCheckpointSinks(
      checkpointId,
      refs,
      this.config.sinks,
      (sink) => {
        let committer = this.committers.get(sink.nodeId);
        if (committer === undefined) {
          committer = this.settings.registry.committerFor(sink, { dynamoDbClient: this.settings.dynamo });
          this.committers.set(sink.nodeId, committer);
        }
        return committer;
      },
      (path) => this.storage.store.get(path),
    );
  }

  /**
   * Deletes shared state files no complete checkpoint lists that are older than twice the checkpoint timeout
   * (what a checkpoint that never completed uploaded). Only the coordinator does this, and only when no slot runs
   * (Recover of a halted job: running chains still reference files of aborted checkpoints); nothing when a
   * checkpoint reads as corrupt (what it lists is unknown). Returns how many went.
   */
  async collectSharedFiles(): Promise<number> {
    const found = (await this.storage.store.objects.listObjects(SHARED_DIR_NAME)).filter((o) => parseSharedFilePath(o.path) !== undefined);
    if (found.length === 0) return 0;
    const stored = await this.storage.list();
    if (stored.some((c) => c.status !== 'complete')) return 0;
    const complete = stored.flatMap((c) => (c.status === 'complete' ? [c.metadata] : []));
    const paths = collectableSharedFiles(found, complete, this.now(), 2 * this.options.timeoutMs);
    await this.storage.sharedState.remove(paths);
    if (paths.length > 0) this.log({ event: 'shared-files-deleted', files: paths.length });
    return paths.length;
  }

  /** Takes `request#` items still queued: each becomes a savepoint (or stop) of the pure coordinator, once. */
  async takeRequests(): Promise<void> {
    const requests = await this.table.requests();
    let coordinator = this.coordinator;
    const taken: Record<string, number> = { ...(this.require().requests ?? {}) };
    const commands: CoordinatorCommand[] = [];
    const fresh: string[] = [];
    for (const request of requests) {
      if (request.status !== 'queued') continue;
      if (taken[request.id] === undefined) {
        const step = coordinator.triggerSavepoint(this.now(), { stop: request.kind === 'stop' });
        coordinator = step.coordinator;
        commands.push(...step.commands);
        taken[request.id] = step.requestId;
      }
      fresh.push(request.id);
    }
    if (fresh.length === 0) return;
    if (Object.keys(taken).length > Object.keys(this.require().requests ?? {}).length) await this.follow({ coordinator, commands }, { requests: taken });
    for (const id of fresh) await this.table.updateRequest(id, { status: 'running' }, this.now());
  }
}
