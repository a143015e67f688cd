import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';

/**
 * The layers of lib/, bottom first. A folder may import itself and the folders in its `mayImport`, which must all
 * stand below it: no layer reaches up, so no change to a higher layer can break a lower one. Rules are by folder
 * (every file in the folder, now and later), and every folder of lib/ is a layer (test/unit/lint/layers.test.ts).
 * lib/index.ts, the public API, sits above them all and nothing in lib/ imports it.
 */
export const LAYERS = [
  // Records, batches, watermarks, key groups and key validation, clocks, errors, fencing token, fault points.
  { folder: 'core', mayImport: [] },
  // Pure checkpoint protocol: coordinator, barrier alignment, restore and retention plans, naming. No I/O.
  { folder: 'checkpoint', mayImport: ['core'] },
  // Pure cluster protocol: control-table items, lease decisions, exchange delivery rules. No I/O.
  { folder: 'cluster', mayImport: ['core', 'checkpoint'] },
  // Keyed state: interfaces, timer services, the snapshot file format, memory/ and rocksdb/ backends.
  { folder: 'state', mayImport: ['core'] },
  // What a job implements and configures: function interfaces, join functions, watermark strategy, job options.
  { folder: 'contracts', mayImport: ['core', 'state'] },
  // Checkpoint storage: where snapshots and metadata are kept (interface, filesystem implementation).
  { folder: 'storage', mayImport: ['core', 'checkpoint', 'state'] },
  // Source and sink contracts and their implementations: local/ and aws/ (the only users of @aws-sdk in lib/).
  { folder: 'connectors', mayImport: ['core', 'checkpoint', 'cluster', 'state', 'storage'] },
  // Operators: the operator contract, basic, process, join and window operators.
  { folder: 'operators', mayImport: ['core', 'state', 'contracts', 'connectors'] },
  // Logical graph and physical plan.
  { folder: 'graph', mayImport: ['core', 'checkpoint', 'cluster', 'contracts', 'connectors', 'operators'] },
  // The DataStream builder that users call, and job definitions.
  { folder: 'api', mayImport: ['core', 'checkpoint', 'cluster', 'state', 'contracts', 'connectors', 'operators', 'graph'] },
  // Tasks, channels, threads, checkpoint driver, restore, restarts, control: runs a built job.
  {
    folder: 'runtime',
    mayImport: ['core', 'checkpoint', 'cluster', 'state', 'contracts', 'storage', 'connectors', 'operators', 'graph', 'api'],
  },
  // The `sluice` command: a composition root.
  {
    folder: 'cli',
    mayImport: ['core', 'checkpoint', 'cluster', 'state', 'contracts', 'storage', 'connectors', 'operators', 'graph', 'api', 'runtime'],
  },
];

for (const [index, layer] of LAYERS.entries()) {
  for (const lower of layer.mayImport) {
    const at = LAYERS.findIndex((l) => l.folder === lower);
    if (at < 0 || at >= index) throw new Error(`eslint.config.js: lib/${layer.folder} may only import layers below it, not lib/${lower}`);
  }
}

/** Imports inside a layer that the layer order alone does not forbid. */
const INNER_ZONES = [
  {
    // Only rocksdb/ loads the native binding: the state interfaces, timers, file format and memory/ stay free of it.
    target: ['./lib/state/*.ts', './lib/state/memory', './lib/state/timers', './lib/state/snapshot-format'],
    from: './lib/state/rocksdb',
    message: 'only lib/state/rocksdb (and composition roots) may use the RocksDB backend',
  },
  {
    target: './lib/state/rocksdb',
    from: './lib/state/memory',
    message: 'the state backends share only lib/state, not each other',
  },
  {
    target: './lib/connectors/local',
    from: './lib/connectors/aws',
    message: 'local connectors must not pull in the AWS SDK',
  },
];

/** The engine does not choose AWS implementations: the composition root (cli, functions/, tests) passes them in. */
const RUNTIME_NOT_AWS = {
  target: './lib/runtime',
  from: './lib/connectors/aws',
  message: 'lib/runtime gets AWS implementations from its caller (a composition root), it does not import them',
};

const layerZones = LAYERS.map((layer) => ({
  target: `./lib/${layer.folder}`,
  from: './lib',
  except: [layer.folder, ...layer.mayImport].map((f) => `./${f}`),
  message:
    layer.mayImport.length === 0
      ? `lib/${layer.folder} imports nothing else from lib/`
      : `lib/${layer.folder} may import only itself and lib/{${layer.mayImport.join(',')}} (layers in eslint.config.js)`,
}));

const restrictedPaths = (zones) => ['error', { basePath: import.meta.dirname, zones }];

export default tseslint.config(
  { ignores: ['node_modules/**', 'coverage/**', '.sluice/**', 'out/**', 'dist/**'] },
  ...tseslint.configs.recommended,
  importX.flatConfigs.typescript,
  {
    files: ['**/*.ts'],
    settings: {
      // Imports name their .ts files explicitly, so Node's own resolution finds every module.
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.mjs'] })],
    },
    rules: {
      'import-x/no-cycle': ['error', { maxDepth: Infinity }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // The layers, and no plain Errors: every error lib/ throws is a SluiceError with a code (lib/core/errors.ts).
    files: ['lib/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': restrictedPaths([...layerZones, ...INNER_ZONES, RUNTIME_NOT_AWS]),
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Error'], CallExpression[callee.name='Error']",
          message: 'throw a typed error (a SluiceError subclass from lib/core/errors.ts or beside its code), not Error',
        },
      ],
    },
  },
  {
    // ARCHITECTURE.md rule 3: the AWS SDK stays in lib/connectors/aws and functions/.
    files: ['lib/**/*.ts'],
    ignores: ['lib/connectors/aws/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['@aws-sdk/*'] }] },
  },
  {
    // ARCHITECTURE.md rule 3: infra/ (the CDK app) points at functions/ by path and never loads the AWS SDK or the
    // runtime; it may import pure constants and the typed errors of lib/core.
    files: ['infra/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['@aws-sdk/*', '**/functions/**', '**/lib/connectors/**', '**/lib/runtime/**'] }] },
  },
  {
    // lib/core is the bottom layer: it may import nothing else from lib/.
    files: ['lib/core/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['../*', '@aws-sdk/*'] }] },
  },
  {
    // lib/checkpoint is pure logic: no I/O modules.
    files: ['lib/checkpoint/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['node:fs*', 'node:net', 'node:http*', 'fs', '@aws-sdk/*'] }],
    },
  },
);
