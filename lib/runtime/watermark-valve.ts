/**
 * Combines the watermarks of a task's input channels: the task's watermark is the minimum over channels that are
 * neither idle nor ended, and it never goes backwards. When every open channel is idle the task is idle.
 */
export class WatermarkValve {
  private readonly watermarks: number[];
  private readonly idle: boolean[];
  private readonly ended: boolean[];
  private current = Number.NEGATIVE_INFINITY;
  private allIdle = false;

  constructor(channels: number) {
    this.watermarks = new Array<number>(channels).fill(Number.NEGATIVE_INFINITY);
    this.idle = new Array<boolean>(channels).fill(false);
    this.ended = new Array<boolean>(channels).fill(false);
  }

  get watermark(): number {
    return this.current;
  }

  get isIdle(): boolean {
    return this.allIdle;
  }

  /** Returns the new combined watermark if it advanced, else undefined. */
  onWatermark(channel: number, timestamp: number): number | undefined {
    if (timestamp > (this.watermarks[channel] as number)) this.watermarks[channel] = timestamp;
    // A watermark implies activity on that channel.
    if (this.idle[channel]) this.idle[channel] = false;
    return this.recompute();
  }

  onIdle(channel: number, idle: boolean): number | undefined {
    this.idle[channel] = idle;
    return this.recompute();
  }

  onEnd(channel: number): number | undefined {
    this.ended[channel] = true;
    return this.recompute();
  }

  private recompute(): number | undefined {
    let min = Number.POSITIVE_INFINITY;
    let active = 0;
    let open = 0;
    for (let i = 0; i < this.watermarks.length; i++) {
      if (this.ended[i]) continue;
      open++;
      if (this.idle[i]) continue;
      active++;
      const wm = this.watermarks[i] as number;
      if (wm < min) min = wm;
    }
    this.allIdle = open > 0 && active === 0;
    if (active === 0 && open > 0) return undefined;
    if (min > this.current) {
      this.current = min;
      return min;
    }
    return undefined;
  }
}
