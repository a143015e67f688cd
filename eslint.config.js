import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';

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
    // ARCHITECTURE.md rule 3: the AWS SDK stays in lib/connectors/aws and functions/.
    files: ['lib/**/*.ts'],
    ignores: ['lib/connectors/aws/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['@aws-sdk/*'] }] },
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
