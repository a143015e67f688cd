export * from './types.ts';
export * from './naming.ts';
export * from './task-ids.ts';
export * from './barrier-aligner.ts';
export * from './coordinator-options.ts';
export * from './coordinator-protocol.ts';
export * from './coordinator.ts';
export * from './shared-file-registry.ts';
