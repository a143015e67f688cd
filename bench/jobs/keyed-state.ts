import { writeSync } from 'node:fs';
import { defineJob, generatorSource, valueState, type KeyedProcessFunction, type KeyedRuntimeContext, type ValueState } from 'sluice';
import { countingSink } from '../counting-sink.ts';

interface Update {
  readonly key: string;
  readonly index: number;
}

/**
 * Keeps the latest value per key: a string of `bytes` one-byte characters made fresh for every record (a flat string
 * of its own, not a slice of a shared one), so that `keys` keys hold about `keys * bytes` bytes of state on the heap
 * and in a checkpoint.
 */
class KeepLatest implements KeyedProcessFunction<string, Update, never> {
  private state!: ValueState<string>;
  private readonly scratch: Buffer;

  constructor(private readonly bytes: number) {
    this.scratch = Buffer.alloc(bytes, 'x');
  }

  open(ctx: KeyedRuntimeContext): void {
    this.state = ctx.getState(valueState<string>('latest'));
  }

  processElement(update: Update): void {
    const digits = this.scratch.write(String(update.index), 0, 'latin1');
    this.state.update(this.scratch.toString('latin1', 0, this.bytes));
    this.scratch.fill('x', 0, digits);
  }
}

/**
 * Keyed state of a chosen size for the checkpoint benchmarks: record i updates key i % keys, so the first `keys`
 * records create the state and later ones only replace values. `--events 0` never ends; `--rate` throttles.
 * With `--announce-first`, the first record the source emits in this process is reported on stderr as
 * `FIRST_RECORD <epoch ms>` (written straight to fd 2: a worker thread's stderr is forwarded asynchronously).
 */
export default defineJob({
  name: 'bench-keyed-state',
  flags: {
    keys: { type: 'number', integer: true, min: 1, default: 10_000, description: 'distinct keys' },
    valueBytes: { type: 'number', integer: true, min: 16, default: 1_000, description: 'bytes of each key value' },
    events: { type: 'number', integer: true, min: 0, default: 0, description: 'records to generate (0: unbounded)' },
    rate: { type: 'number', min: 0, default: 0, description: 'records per second (0: as fast as possible)' },
    announceFirst: { type: 'boolean', default: false, description: 'report the first record on stderr' },
  },
  build(env, flags) {
    const keys = flags.keys;
    let announced = !flags.announceFirst;
    env
      .fromSource(
        generatorSource<Update>({
          count: flags.events === 0 ? undefined : flags.events,
          ratePerSecond: flags.rate === 0 ? undefined : flags.rate,
          generate: (index) => ({ key: `k-${index % keys}`, index }),
        }),
      )
      .map((u) => {
        if (!announced) {
          announced = true;
          writeSync(2, `FIRST_RECORD ${Date.now()}\n`);
        }
        return u;
      }, 'FirstRecord')
      .keyBy((u) => u.key)
      .process(new KeepLatest(flags.valueBytes), 'KeepLatest')
      .sinkTo(countingSink());
  },
});
