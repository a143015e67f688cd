/**
 * Warnings that repeat (a checkpoint aborted for the same reason, again and again) printed without flooding stderr:
 * the first of a kind at once, then at most one line per `intervalMs` saying how many were held back. Lines are of
 * the same kind when they differ only in their numbers (checkpoint ids, counts).
 */
export class RateLimitedLog {
  private readonly kinds = new Map<string, { lastPrintedAt: number; held: number; last: string }>();

  constructor(
    private readonly log: (line: string) => void,
    private readonly options: { intervalMs?: number; now?: () => number } = {},
  ) {}

  /** Prints `line` unless a line of its kind was printed less than `intervalMs` ago. */
  warn(line: string): void {
    const now = (this.options.now ?? Date.now)();
    const kind = line.replace(/\d+/g, '#');
    const seen = this.kinds.get(kind);
    if (seen === undefined) {
      this.kinds.set(kind, { lastPrintedAt: now, held: 0, last: line });
      this.log(line);
      return;
    }
    seen.last = line;
    if (now - seen.lastPrintedAt < (this.options.intervalMs ?? 5000)) {
      seen.held++;
      return;
    }
    this.log(withRepeats(line, seen.held));
    seen.lastPrintedAt = now;
    seen.held = 0;
  }

  /** Prints the last held-back line of every kind with its count (at the end, so no repeat goes unmentioned). */
  flush(): void {
    for (const seen of this.kinds.values()) {
      if (seen.held > 0) this.log(withRepeats(seen.last, seen.held - 1));
      seen.held = 0;
    }
  }
}

function withRepeats(line: string, earlier: number): string {
  return earlier === 0 ? line : `${line} (and ${earlier} more like it since the last report)`;
}
