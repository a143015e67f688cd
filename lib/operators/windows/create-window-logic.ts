import type { Key } from '../../core/index.ts';
import type { KeyedStateBackend } from '../../state/index.ts';
import { SessionWindowLogic } from './session-window-logic.ts';
import { SlicedWindowLogic } from './sliced-window-logic.ts';
import type { WindowAssigner } from './window-assigner.ts';
import type { WindowContents } from './window-contents.ts';
import type { WindowLogic } from './window-logic.ts';
import type { WindowTimers } from './window-timers.ts';

/** The window logic for the assigner's family of windows, over the operator's contents. */
export function createWindowLogic<K extends Key>(
  assigner: WindowAssigner,
  lateness: number,
  backend: KeyedStateBackend,
  contents: WindowContents<K>,
  timers: WindowTimers,
): WindowLogic<K> {
  const params = { isEventTime: assigner.isEventTime, allowedLatenessMs: lateness };
  switch (assigner.kind) {
    case 'session':
      return new SessionWindowLogic<K>({ ...params, gapMs: assigner.gapMs }, backend, contents, timers);
    case 'tumbling':
      return new SlicedWindowLogic<K>(
        { ...params, sizeMs: assigner.sizeMs, slideMs: assigner.sizeMs, offsetMs: assigner.offsetMs },
        contents,
        timers,
      );
    case 'sliding':
      return new SlicedWindowLogic<K>(
        { ...params, sizeMs: assigner.sizeMs, slideMs: assigner.slideMs, offsetMs: assigner.offsetMs },
        contents,
        timers,
      );
  }
}
