export * from './descriptors.ts';
export * from './keyed-state.ts';
export * from './backend.ts';
export * from './timer-state.ts';
