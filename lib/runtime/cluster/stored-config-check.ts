import { ConfigError } from '../../core/index.ts';
import type { ClusterConfigItem } from '../../cluster/control-items.ts';
import type { PhysicalPlan } from '../../graph/physical-plan.ts';
import { clusterFingerprint } from '../../graph/slot-plan.ts';

/** A checkpoint location without trailing slashes (`s3://b/p/` and `s3://b/p` are one place). */
function normalDir(dir: string): string {
  return dir.replace(/\/+$/, '');
}

/**
 * Refuses a worker whose job or flags are not the ones `sluice aws init` deployed (ConfigError: the worker exits 2).
 * The slot plan's fingerprint (planSlots) covers the operators, their order, key hashes and edge modes, so a worker built with
 * other job flags would otherwise restore another layout's state and hand committables to sinks described by the
 * init-time descriptors. A different `--checkpoint-dir` would put task files and committables where the
 * coordinator never looks: every checkpoint of the job would fail, and every restore.
 */
export function checkStoredConfig(config: ClusterConfigItem, plan: PhysicalPlan, checkpointDir: string): void {
  // Over the stored edges (their modes were checked against the plan's edges before): the plan's own fingerprint
  // (operators, order, key hashes, flags that shape the plan), P and maxParallelism are what can differ.
  const fingerprint = clusterFingerprint(plan, config.parallelism, config.edges);
  if (fingerprint !== config.fingerprint) {
    throw new ConfigError(
      `the job does not match the deployed one: its slot plan fingerprint is ${fingerprint.slice(0, 12)}, the stored config's ${config.fingerprint.slice(0, 12)}; run the job module and job flags given to \`sluice aws init\` (or deploy this one with \`sluice aws init --fresh\`)`,
    );
  }
  if (normalDir(checkpointDir) !== normalDir(config.checkpointDir)) {
    throw new ConfigError(
      `--checkpoint-dir is ${JSON.stringify(checkpointDir)} but the job was deployed with ${JSON.stringify(config.checkpointDir)}: workers and the coordinator must use the same checkpoint storage`,
    );
  }
}

/** A worker's --lease-duration-ms as parsed: the value, and whether it was given or is the default. */
export interface LeaseDurationFlag {
  readonly leaseDurationMs: number;
  readonly leaseDurationMsGiven?: true;
}

/**
 * The lease duration a worker runs with: the one `sluice aws init` stored for the job (every worker must count
 * leases alike, or one with a shorter duration takes the live slots of one with a longer one; each take aborts the
 * checkpoint in flight). A worker flag that differs is refused (ConfigError: exit 2); without the flag the stored
 * value is adopted; a config written before the duration was stored leaves the worker's own value.
 */
export function leaseDurationFor(config: Pick<ClusterConfigItem, 'leaseDurationMs'>, flag: LeaseDurationFlag): number {
  const stored = config.leaseDurationMs;
  if (stored === undefined) return flag.leaseDurationMs;
  if (flag.leaseDurationMsGiven === true && flag.leaseDurationMs !== stored) {
    throw new ConfigError(
      `--lease-duration-ms is ${flag.leaseDurationMs} but the job was deployed with a lease duration of ${stored} ms: every worker of a job must use the same one; drop the flag (the worker then uses the stored ${stored}) or deploy another with \`sluice aws init --fresh --lease-duration-ms N\``,
    );
  }
  return stored;
}
