import { describe, expect, it } from 'vitest';
import { WatermarkValve } from '../../../lib/runtime/watermark-valve.ts';

describe('WatermarkValve', () => {
  it('emits the minimum over channels, only when it advances', () => {
    const v = new WatermarkValve(2);
    expect(v.onWatermark(0, 10)).toBeUndefined();
    expect(v.onWatermark(1, 5)).toBe(5);
    expect(v.onWatermark(1, 20)).toBe(10);
    expect(v.onWatermark(0, 8)).toBeUndefined(); // never backwards
    expect(v.watermark).toBe(10);
  });

  it('ignores idle channels and resumes them when active', () => {
    const v = new WatermarkValve(2);
    v.onWatermark(0, 100);
    expect(v.onIdle(1, true)).toBe(100);
    expect(v.isIdle).toBe(false);
    expect(v.onIdle(0, true)).toBeUndefined();
    expect(v.isIdle).toBe(true);
    // Channel 1 comes back behind the combined watermark: it cannot pull it back.
    expect(v.onWatermark(1, 50)).toBeUndefined();
    expect(v.isIdle).toBe(false);
    expect(v.onWatermark(1, 150)).toBe(150); // channel 0 is idle: only channel 1 counts
  });

  it('lets ended channels stop holding the watermark', () => {
    const v = new WatermarkValve(3);
    v.onWatermark(0, 1);
    v.onWatermark(1, 7);
    v.onWatermark(2, 9);
    expect(v.watermark).toBe(1);
    expect(v.onEnd(0)).toBe(7);
    expect(v.onEnd(1)).toBe(9);
  });
});
