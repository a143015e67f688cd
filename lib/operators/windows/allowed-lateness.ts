import { ConfigError, MAX_WINDOW_DURATION_MS } from '../../core/index.ts';
import type { WindowAssigner } from './window-assigner.ts';

/**
 * Allowed lateness is a whole number of milliseconds and only means something in event time. `eventTimeAssigner`
 * names the remedy in the operator's own words.
 */
export function requireAllowedLateness(
  where: string,
  assigner: WindowAssigner,
  lateness: number,
  eventTimeAssigner: string,
): void {
  if (!Number.isSafeInteger(lateness) || lateness < 0 || lateness > MAX_WINDOW_DURATION_MS) {
    throw new ConfigError(
      `${where}: allowed lateness must be a whole number of milliseconds from 0 to ${MAX_WINDOW_DURATION_MS}, got ${String(lateness)}`,
    );
  }
  if (!assigner.isEventTime && lateness > 0) {
    throw new ConfigError(
      `${where}: allowed lateness (${lateness} ms) applies only to event-time windows, and ${String(assigner)} ` +
        `uses processing time; remove the allowed lateness or use an ${eventTimeAssigner}`,
    );
  }
}
