import type { BaselineFactory } from './baseline.ts';
import { q0Baseline } from './q0.ts';
import { q1Baseline } from './q1.ts';
import { q11Baseline } from './q11.ts';
import { q2Baseline } from './q2.ts';
import { q5Baseline } from './q5.ts';
import { q7Baseline } from './q7.ts';
import { q8Baseline } from './q8.ts';

/** The hand-written baselines, by query name (the queries that have one). */
export const BASELINES: Readonly<Record<string, BaselineFactory>> = {
  q0: q0Baseline,
  q1: q1Baseline,
  q2: q2Baseline,
  q5: q5Baseline,
  q7: q7Baseline,
  q8: q8Baseline,
  q11: q11Baseline,
} as Record<string, BaselineFactory>;
