export { jsonlFileSource } from './jsonl-file-source.ts';
export type { JsonlFileSource, JsonlFileSourceOptions, JsonlFollowOptions, JsonlFileReader } from './jsonl-file-source.ts';
export type { JsonlFileSplit } from './jsonl-file-split.ts';
export type { JsonlSourceCounters } from './jsonl-split-reader.ts';
export type { DeadLetter } from './dead-letter-file.ts';
export { jsonlAppendSink } from './jsonl-append-sink.ts';
export type { JsonlAppendSink, JsonlAppendSinkOptions } from './jsonl-append-sink.ts';
export type { AppendCommittable } from './append-file-commit.ts';
export { AppendCommitError } from './append-file-commit.ts';
export { checkOutputFile, checkOutputDirectory } from './output-file-checks.ts';
export type { OutputFileCheck } from './output-file-checks.ts';
export { generatorSource } from './generator-source.ts';
export type {
  GeneratorSource,
  GeneratorSourceOptions,
  GeneratorSplit,
  RecordGenerator,
  Transaction,
} from './generator-source.ts';
export { printSink } from './print-sink.ts';
export type { PrintSinkOptions, PrintStream } from './print-sink.ts';
export { jsonlFileSink } from './jsonl-file-sink.ts';
export type { JsonlFileSink, JsonlFileSinkOptions } from './jsonl-file-sink.ts';
export type { PartFileCommittable, PartFileState } from './part-file.ts';
export { PartFileCommitError } from './part-file-commit.ts';
export { collectSink } from './collect-sink.ts';
export type { CollectSink } from './collect-sink.ts';
