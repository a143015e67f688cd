export * from './errors.ts';
export * from './fencing.ts';
export * from './time.ts';
export * from './batch.ts';
export * from './elements.ts';
export * from './key-group.ts';
export * from './key-validation.ts';
export * from './output-tag.ts';
