import type { RecordBatch } from '../../core/index.ts';
import type { TwoPhaseCommitSinkWriter } from '../sink.ts';
import { PartFile } from './part-file.ts';
import type { PartFileCommittable } from './part-file.ts';
import { commitPartFiles, fsyncDirectory } from './part-file-commit.ts';
import { nextPartNumber, partFilePaths } from './part-file-names.ts';

export interface JsonlFileWriterConfig<T> {
  readonly dir: string;
  readonly prefix: string;
  readonly rollSize: number;
  readonly bufferSize: number;
  readonly format: (value: T) => string;
}

/**
 * Writes one subtask's part files. With checkpoints every file, rolled over or current, waits as pending until a
 * `prepareCommit` hands it out and the runtime commits it; `finish` makes nothing visible. Without, a rolled-over
 * file is committed at once and `finish` commits the current one.
 */
export class JsonlFileWriter<T> implements TwoPhaseCommitSinkWriter<T, PartFileCommittable> {
  private current: PartFile | undefined;
  /** Rolled over (pending) since the last prepareCommit, in order; only with checkpoints. */
  private rolled: PartFileCommittable[] = [];
  private nextPart: number;

  constructor(
    private readonly config: JsonlFileWriterConfig<T>,
    private readonly subtask: number,
    /** Part of the hidden names, so cleanup can tell this writer's files from leftovers. */
    readonly attempt: string,
    private readonly checkpointing: boolean,
  ) {
    this.nextPart = nextPartNumber(config.dir, config.prefix, subtask);
  }

  write(batch: RecordBatch<T>): void {
    const values = batch.values;
    const { format, rollSize } = this.config;
    for (let i = 0; i < values.length; i++) {
      const file = this.current ?? this.open();
      file.append(format(values[i] as T) + '\n');
      if (file.reached(rollSize)) this.rollOver();
    }
  }

  /** Makes the current file (if it has data) pending and hands out every pending file not handed out before. */
  prepareCommit(): PartFileCommittable[] {
    if (this.current !== undefined) this.rolled.push(this.closeCurrent());
    const prepared = this.rolled;
    this.rolled = [];
    // The pending names must be durable before a checkpoint holds them.
    if (prepared.length > 0) fsyncDirectory(this.config.dir);
    return prepared;
  }

  finish(): void {
    if (!this.checkpointing && this.current !== undefined) commitPartFiles([this.closeCurrent()]);
  }

  /** The in-progress file is left for `cleanUpDangling` of a later attempt; pending ones for their commits. */
  close(): void {
    this.current?.abandon();
    this.current = undefined;
  }

  private open(): PartFile {
    const { dir, prefix, bufferSize } = this.config;
    this.current = PartFile.create(partFilePaths(dir, prefix, this.subtask, this.nextPart++, this.attempt), bufferSize);
    return this.current;
  }

  private rollOver(): void {
    const committable = this.closeCurrent();
    if (this.checkpointing) this.rolled.push(committable);
    else commitPartFiles([committable]);
  }

  private closeCurrent(): PartFileCommittable {
    const file = this.current as PartFile;
    this.current = undefined;
    return file.closeForCommit();
  }
}
