// The package as a user gets it: `npm pack` (which builds dist/ through prepack), installed into a fresh project,
// then a plain JavaScript job and a TypeScript job (type-checked against the installed declarations with the repo's
// tsc) run with `npx sluice run`, on worker threads, from the compiled code. Outputs are checked against values
// computed here.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshProject } from './offline-lock.ts';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const TSC = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const run = promisify(execFile);

// The outer `npm test` leaves its own lifecycle variables behind; the inner npm commands must not see them.
const env = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith('npm_lifecycle_') && !name.startsWith('npm_package_')),
);

let work: string;
let project: string;
let tarballFiles: string[];

async function npm(args: readonly string[], cwd: string): Promise<string> {
  const { stdout } = await run('npm', [...args], { cwd, env, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

async function sluice(args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  return run('npx', ['--no-install', 'sluice', ...args], { cwd: project, env, maxBuffer: 64 * 1024 * 1024 });
}

/** stdout lines without the print sink's subtask prefix ("2> "). */
function printed(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.replace(/^\d+> /, ''));
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sluice-pack-'));
  const packed = JSON.parse(await npm(['pack', '--json', '--pack-destination', work], REPO_ROOT)) as {
    filename: string;
    files: { path: string }[];
  }[];
  const tarball = join(work, packed[0]!.filename);
  tarballFiles = packed[0]!.files.map((f) => f.path);
  project = join(work, 'project');
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Parameters<typeof freshProject>[2];
  const files = freshProject(join(REPO_ROOT, 'package-lock.json'), tarball, manifest);
  await run('mkdir', [project]);
  writeFileSync(join(project, 'package.json'), files.packageJson);
  writeFileSync(join(project, 'package-lock.json'), files.packageLock);
  await npm(['install', '--prefer-offline', '--no-audit', '--no-fund'], project);
  for (const fixture of readdirSync(FIXTURES)) copyFileSync(join(FIXTURES, fixture), join(project, fixture));
}, 300_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('npm pack installed into a fresh project', () => {
  it('ships the compiled code and the command, not the sources or the tests', () => {
    expect(tarballFiles).toContain('dist/index.js');
    expect(tarballFiles).toContain('dist/index.d.ts');
    expect(tarballFiles).toContain('dist/connectors/aws/index.d.ts');
    expect(tarballFiles).toContain('dist/state/rocksdb/index.js');
    expect(tarballFiles).toContain('dist/runtime/threads/worker-bootstrap.mjs');
    expect(tarballFiles).toContain('bin/sluice.js');
    expect(tarballFiles.filter((f) => /^(lib|test|examples|bench|scripts)\//.test(f) || /\.ts$/.test(f) && !f.endsWith('.d.ts'))).toEqual([]);
    expect(existsSync(join(project, 'node_modules', 'sluice', 'lib'))).toBe(false);
    // postpack: no build is left in the checkout, where only the sources are meant to run.
    expect(existsSync(join(REPO_ROOT, 'dist'))).toBe(false);
  });

  it('runs a plain JavaScript job with npx sluice run on worker threads', async () => {
    const count = 37;
    const { stdout } = await sluice(['run', 'squares-job.mjs', '--count', String(count), '--parallelism', '2']);
    const expected = Array.from({ length: count }, (_, i) => (i + 1) ** 2);
    expect(printed(stdout).map(Number).sort((a, b) => a - b)).toEqual(expected);
  });

  it('type-checks a TypeScript job importing sluice and sluice/aws against the installed declarations, then runs it', async () => {
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
          typeRoots: [join(REPO_ROOT, 'node_modules', '@types')],
        },
        files: ['account-totals-job.ts'],
      }),
    );
    const checked = await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: project }).catch((error: { stdout: string }) => error);
    expect(checked.stdout).toBe('');

    const count = 41;
    const accounts = 4;
    const { stdout } = await sluice(['run', 'account-totals-job.ts', '--count', String(count), '--accounts', String(accounts), '--parallelism', '2']);
    // A keyed reduce prints each account's running total: the last (largest) is the account's sum.
    const totals = new Map<string, number>();
    for (const line of printed(stdout)) {
      const [account, cents, endpoint] = line.split(' ');
      expect(endpoint).toBe('endpoint=none');
      totals.set(account!, Math.max(totals.get(account!) ?? 0, Number(cents)));
    }
    const expected = new Map<string, number>();
    for (let i = 0; i < count; i++) expected.set(`a-${i % accounts}`, (expected.get(`a-${i % accounts}`) ?? 0) + i + 1);
    expect(printed(stdout)).toHaveLength(count);
    expect(totals).toEqual(expected);
  });
});
