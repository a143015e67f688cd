import { InternalError, type Key } from '../../core/index.ts';
import { VOID_NAMESPACE, valueState, type InternalValueState, type KeyedStateBackend } from '../../state/index.ts';
import type { Timer } from '../../state/timers/timer-service.ts';
import type { WindowContents } from './window-contents.ts';
import type { WindowLogic } from './window-logic.ts';
import type { WindowTimers } from './window-timers.ts';

/** Name of the keyed state listing a key's open sessions. */
export const SESSIONS_STATE = 'window-sessions';

export interface SessionParams {
  readonly gapMs: number;
  readonly isEventTime: boolean;
  readonly allowedLatenessMs: number;
}

/**
 * Session windows with Flink's merging semantics (MergingWindowSet + EventTimeTrigger / ProcessingTimeTrigger).
 *
 * Per key, the open sessions are kept as one flat array of triples [start, end, stateId], sorted by start, in
 * a value state (a new array on every change: stored values are immutable). `stateId` is the namespace of the
 * session's contents: the start of the window that first held them. Merging moves the other sessions' contents
 * into it, so that extending a session (the common case) moves no state. State ids are unique among a key's open
 * sessions because each lies inside its session and sessions are disjoint.
 *
 * Timers use the session start as namespace: fire at end - 1, cleanup at end - 1 + lateness. A merge deletes the
 * timers of the merged sessions before registering the merged session's, so no stale timer is left behind.
 */
export class SessionWindowLogic<K extends Key> implements WindowLogic<K> {
  private readonly gap: number;
  private readonly isEventTime: boolean;
  private readonly lateness: number;
  private readonly sessions: InternalValueState<number[]>;

  constructor(
    params: SessionParams,
    backend: KeyedStateBackend,
    private readonly contents: WindowContents<K>,
    private readonly timers: WindowTimers,
  ) {
    this.gap = params.gapMs;
    this.isEventTime = params.isEventTime;
    this.lateness = params.isEventTime ? params.allowedLatenessMs : 0;
    this.sessions = backend.getValueState(valueState<number[]>(SESSIONS_STATE));
    this.sessions.setCurrentNamespace(VOID_NAMESPACE);
  }

  processElement(value: unknown, time: number, key: K, watermark: number): boolean {
    const start = time;
    const end = time + this.gap;
    const sessions = this.sessions.value();
    // Open sessions that overlap or touch [start, end) form one contiguous run.
    let first = -1;
    let last = -1;
    if (sessions !== undefined) {
      for (let i = 0; i < sessions.length; i += 3) {
        const sessionStart = sessions[i] as number;
        if (sessionStart > end) break;
        if ((sessions[i + 1] as number) >= start) {
          if (first < 0) first = i;
          last = i;
        }
      }
    }
    if (sessions === undefined || first < 0) return this.openSession(sessions, value, start, end, key, watermark);

    const firstStart = sessions[first] as number;
    const lastEnd = sessions[last + 1] as number;
    const target = sessions[first + 2] as number;
    const contents = this.contents;
    if (first === last && firstStart <= start && lastEnd >= end) {
      contents.setNamespace(target);
      contents.add(value);
      if (this.isEventTime && lastEnd - 1 <= watermark) this.fire(key, firstStart, lastEnd, target);
      return true;
    }

    const mergedStart = Math.min(start, firstStart);
    const mergedEnd = Math.max(end, lastEnd);
    if (this.isEventTime && mergedEnd - 1 + this.lateness <= watermark) {
      throw new InternalError(
        `session [${mergedStart}, ${mergedEnd}) became late by merging at watermark ${watermark}: ` +
          'an open session outlived its cleanup time',
      );
    }
    const sources: number[] = [];
    for (let i = first; i <= last; i += 3) {
      this.deleteTimers(key, sessions[i] as number, sessions[i + 1] as number);
      if (i !== first) sources.push(sessions[i + 2] as number);
    }
    this.registerTimers(key, mergedStart, mergedEnd, watermark);
    if (sources.length > 0) contents.mergeNamespaces(target, sources);
    const next = sessions.slice(0, first);
    next.push(mergedStart, mergedEnd, target);
    for (let i = last + 3; i < sessions.length; i++) next.push(sessions[i] as number);
    this.sessions.update(next);

    contents.setNamespace(target);
    contents.add(value);
    if (this.isEventTime && mergedEnd - 1 <= watermark) this.fire(key, mergedStart, mergedEnd, target);
    return true;
  }

  onTimer(timer: Timer): void {
    const sessions = this.sessions.value();
    if (sessions === undefined) return;
    let index = -1;
    for (let i = 0; i < sessions.length; i += 3) {
      if (sessions[i] === timer.namespace) {
        index = i;
        break;
      }
    }
    if (index < 0) return;
    const start = sessions[index] as number;
    const end = sessions[index + 1] as number;
    const stateId = sessions[index + 2] as number;
    const maxTimestamp = end - 1;
    if (timer.timestamp === maxTimestamp) this.fire(timer.key as K, start, end, stateId);
    if (timer.timestamp === maxTimestamp + this.lateness) {
      this.contents.setNamespace(stateId);
      this.contents.clear();
      if (sessions.length === 3) this.sessions.clear();
      else this.sessions.update(sessions.slice(0, index).concat(sessions.slice(index + 3)));
    }
  }

  private openSession(
    sessions: number[] | undefined,
    value: unknown,
    start: number,
    end: number,
    key: K,
    watermark: number,
  ): boolean {
    if (this.isEventTime && end - 1 + this.lateness <= watermark) return false;
    let next: number[];
    if (sessions === undefined) next = [start, end, start];
    else {
      let at = 0;
      while (at < sessions.length && (sessions[at] as number) < start) at += 3;
      next = sessions.slice(0, at);
      next.push(start, end, start);
      for (let i = at; i < sessions.length; i++) next.push(sessions[i] as number);
    }
    this.sessions.update(next);
    this.contents.setNamespace(start);
    this.contents.add(value);
    this.registerTimers(key, start, end, watermark);
    if (this.isEventTime && end - 1 <= watermark) this.fire(key, start, end, start);
    return true;
  }

  private registerTimers(key: K, start: number, end: number, watermark: number): void {
    this.timers.registerWindow(key, start, end - 1, this.lateness, watermark);
  }

  private deleteTimers(key: K, start: number, end: number): void {
    this.timers.delete(key, start, end - 1);
    if (this.lateness > 0) this.timers.delete(key, start, end - 1 + this.lateness);
  }

  private fire(key: K, start: number, end: number, stateId: number): void {
    this.contents.fire(key, { start, end }, stateId, 1, stateId + 1);
  }
}
