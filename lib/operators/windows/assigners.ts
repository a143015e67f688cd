// The window assigners, for the API layer: one import for all of them.
export type {
  WindowAssigner,
  TumblingWindowAssigner,
  SlidingWindowAssigner,
  SessionWindowAssigner,
} from './window-assigner.ts';
export { TumblingEventTimeWindows, TumblingProcessingTimeWindows } from './tumbling-windows.ts';
export { SlidingEventTimeWindows, SlidingProcessingTimeWindows } from './sliding-windows.ts';
export { EventTimeSessionWindows, ProcessingTimeSessionWindows } from './session-windows.ts';
