import { describe, expect, it } from 'vitest';
import { LateDropWarnings } from '../../../lib/runtime/late-drop-warnings.ts';

describe('LateDropWarnings', () => {
  it('warns at the first drop, then at most once per interval with the count so far', () => {
    const lines: string[] = [];
    const warnings = new LateDropWarnings('task "totals" (subtask 1)', (line) => lines.push(line), 10_000);
    warnings.update(0, 0);
    expect(lines).toEqual([]);
    warnings.update(1, 100);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^warning: task "totals" \(subtask 1\) dropped 1 late record: .*late-data side output/);
    // A flood of drops within the interval prints nothing more.
    for (let n = 2; n <= 5000; n++) warnings.update(n, 100 + n);
    expect(lines).toHaveLength(1);
    warnings.update(5000, 10_100);
    expect(lines[1]).toBe('warning: task "totals" (subtask 1) dropped 5,000 late records so far');
    // No new drops: no new line however long it runs.
    warnings.update(5000, 50_000);
    expect(lines).toHaveLength(2);
    warnings.update(5001, 50_001);
    expect(lines[2]).toBe('warning: task "totals" (subtask 1) dropped 5,001 late records so far');
  });
});
