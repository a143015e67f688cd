import type { TimeWindow } from '../../contracts/functions.ts';
import type { ProcessWindowJoinFunction } from '../../contracts/join-functions.ts';
import type { Key } from '../../core/index.ts';
import { listState, type InternalListState, type KeyedStateBackend, type Namespace } from '../../state/index.ts';
import {
  gatherElements,
  processWindowContext,
  windowCollector,
  type FiringEnv,
} from '../windows/fired-window-context.ts';
import type { WindowContents } from '../windows/window-contents.ts';

/** Names of the keyed states holding each input's window (or slice) contents. */
export const FIRST_CONTENTS_STATE = 'window-join-first';
export const SECOND_CONTENTS_STATE = 'window-join-second';

/**
 * A window join's contents: one list per input in the same namespace (window, slice or session), so the window
 * logic that fires, merges and purges single-input windows does the same for both inputs at once. The operator
 * sets `input` before adding, which spares wrapping every record in a tagged union as Flink's coGroup does.
 */
export class WindowJoinContents<IN1, IN2, K extends Key, OUT> implements WindowContents<K> {
  /** The input of the records being added: 0 or 1. */
  input = 0;
  private readonly first: InternalListState<IN1>;
  private readonly second: InternalListState<IN2>;

  constructor(
    backend: KeyedStateBackend,
    private readonly fn: ProcessWindowJoinFunction<IN1, IN2, OUT, K>,
    private readonly env: FiringEnv<OUT>,
  ) {
    this.first = backend.getListState(listState<IN1>(FIRST_CONTENTS_STATE));
    this.second = backend.getListState(listState<IN2>(SECOND_CONTENTS_STATE));
  }

  setNamespace(namespace: Namespace): void {
    this.first.setCurrentNamespace(namespace);
    this.second.setCurrentNamespace(namespace);
  }

  /** List state has no cheap emptiness test, so callers re-register timers; that is idempotent. */
  add(value: unknown): boolean {
    if (this.input === 0) this.first.add(value as IN1);
    else this.second.add(value as IN2);
    return true;
  }

  clear(): void {
    this.first.clear();
    this.second.clear();
  }

  mergeNamespaces(target: Namespace, sources: readonly Namespace[]): void {
    this.first.mergeNamespaces(target, sources);
    this.second.mergeNamespaces(target, sources);
  }

  fire(key: K, window: TimeWindow, first: number, step: number, end: number): void {
    const lefts = gatherElements(this.first, first, step, end);
    if (lefts === undefined) return;
    const rights = gatherElements(this.second, first, step, end);
    if (rights === undefined) return;
    const env = this.env;
    const timestamp = window.end - 1;
    const ctx = processWindowContext(env, key, window, timestamp);
    this.fn.process(key, ctx, lefts, rights, windowCollector(env, timestamp));
  }
}
