import type { WatermarkAlignment } from '../../contracts/watermark-strategy.ts';
import type { AlignmentLink } from './alignment-link.ts';

/** Which splits to stop and to start reading again. */
export interface PauseChanges {
  readonly pause: string[];
  readonly resume: string[];
}

/**
 * One source subtask's side of watermark alignment: it reports the subtask's watermark to the group (at most once
 * per update interval while it advances, at once when the subtask pauses, waits, goes idle or finishes) and decides
 * from the group's minimum which splits must pause. The slowest split is never paused (its watermark is the
 * minimum, within the drift), so the group always moves on: no deadlock.
 */
export class SourceAlignment {
  /** Until the group's first minimum arrives, every split that has read anything waits for it. */
  private minimum = Number.NEGATIVE_INFINITY;
  private readonly paused = new Set<string>();
  private reported: number | undefined | null = null;
  private reportedAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly settings: WatermarkAlignment,
    private readonly link: AlignmentLink,
    private readonly member: string,
  ) {}

  /** Listens for the group's minimum; `onChange` runs after each new one (it should wake the task). */
  subscribe(onChange: (apply: () => void) => void): void {
    this.link.subscribe(this.settings.group, (minimum) => onChange(() => (this.minimum = minimum)));
  }

  /** Highest watermark a split may have and still be read. */
  get maxAllowedWatermark(): number {
    return this.minimum + this.settings.maxAllowedDriftMs;
  }

  get pausedSplits(): ReadonlySet<string> {
    return this.paused;
  }

  /**
   * Split-level pausing (FLIP-217): splits of `active` (id -> watermark, splits that are neither idle nor finished)
   * ahead of the allowed watermark pause; paused splits within it, or no longer active, resume.
   */
  splitChanges(active: ReadonlyMap<string, number>): PauseChanges {
    const max = this.maxAllowedWatermark;
    const pause: string[] = [];
    const resume: string[] = [];
    for (const [id, wm] of active) {
      if (wm > max && !this.paused.has(id)) pause.push(id);
    }
    for (const id of this.paused) {
      const wm = active.get(id);
      if (wm === undefined || wm <= max) resume.push(id);
    }
    for (const id of pause) this.paused.add(id);
    for (const id of resume) this.paused.delete(id);
    return { pause, resume };
  }

  /** Subtask-level pausing (FLIP-182), for readers that cannot pause single splits. */
  subtaskPaused(subtaskWatermark: number): boolean {
    return subtaskWatermark > this.maxAllowedWatermark;
  }

  /**
   * Reports the subtask's watermark (undefined: idle or finished) when it changed, and either `force` is set or the
   * update interval passed since the last report.
   */
  report(watermark: number | undefined, now: number, force: boolean): void {
    if (watermark === this.reported) return;
    if (!force && now - this.reportedAt < this.settings.updateIntervalMs) return;
    this.reported = watermark;
    this.reportedAt = now;
    this.link.report(this.settings.group, this.member, watermark);
  }
}
