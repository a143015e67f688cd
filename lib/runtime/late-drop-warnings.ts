/** How often a task repeats its warning while it keeps dropping late records. */
export const LATE_DROP_WARNING_INTERVAL_MS = 10_000;

/**
 * The warning a task prints while it drops late records: at the first drop, then at most once per interval with
 * the count so far, so that a stream of late records cannot flood stderr. The final count is in the job summary.
 */
export class LateDropWarnings {
  private reported = 0;
  private reportedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly task: string,
    private readonly log: (line: string) => void,
    private readonly intervalMs = LATE_DROP_WARNING_INTERVAL_MS,
  ) {}

  /** `dropped`: the task's count so far; `now`: the task clock. */
  update(dropped: number, now: number): void {
    if (dropped <= this.reported) return;
    if (this.reported > 0 && now - this.reportedAt < this.intervalMs) return;
    const first = this.reported === 0;
    this.reported = dropped;
    this.reportedAt = now;
    const what = dropped === 1 ? '1 late record' : `${dropped.toLocaleString('en-US')} late records`;
    this.log(
      first
        ? `warning: ${this.task} dropped ${what}: its event time was behind the watermark (set allowed lateness or a late-data side output to keep such records; further drops are reported every ${this.intervalMs / 1000} s)`
        : `warning: ${this.task} dropped ${what} so far`,
    );
  }
}
