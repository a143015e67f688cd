export * from './checkpoint-storage.ts';
export * from './errors.ts';
export * from './task-snapshot.ts';
export * from './task-state-codec.ts';
export * from './metadata-codec.ts';
export * from './fs/file-checkpoint-storage.ts';
export * from './fs/file-savepoint-storage.ts';
export * from './fs/snapshot-directory.ts';
