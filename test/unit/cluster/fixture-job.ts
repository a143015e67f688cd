import { defineJob } from '../../../lib/api/job.ts';
import { coordinatorSink, Feeds, feedSource } from './slot-fixtures.ts';

/** The rows the fixture job's slots read (the test pushes into it; the worker loads this module in-process). */
export const fixtureFeeds = new Feeds();

export default defineJob({
  name: 'cluster-fixture',
  flags: {},
  build(env) {
    env
      .fromSource(feedSource(fixtureFeeds))
      .keyBy((r) => r.k)
      .reduce((a, b) => ({ k: a.k, v: a.v + b.v }))
      .sinkTo(coordinatorSink());
  },
});
