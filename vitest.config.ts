import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Bounds for a hang, not for speed: tests wait for conditions, and on a loaded machine a `sluice run` child alone
    // can take half a minute to start (tests that ran in 10 s idle took over 100 s beside other CPU-bound work).
    testTimeout: 180_000,
    hookTimeout: 180_000,
    pool: 'forks',
  },
  resolve: {
    // `sluice` in tests is the source, as tsconfig.json's paths say (package.json's exports point to the build).
    tsconfigPaths: true,
  },
});
