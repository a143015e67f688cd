import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The worker image (Dockerfile, .dockerignore) without Docker: its instructions are parsed and checked, and its
 * ENTRYPOINT is run here as the image would run it, against a job bundled by the same build step.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const JOB = 'examples/kinesis-to-dynamodb.ts';

interface Instruction {
  readonly keyword: string;
  readonly args: string;
  /** Index of the stage (FROM) it belongs to. */
  readonly stage: number;
}

interface Stage {
  readonly image: string;
  readonly name: string | undefined;
  readonly platform: string | undefined;
}

/** Instructions of a Dockerfile: comments dropped, backslash continuations joined. */
function parseDockerfile(text: string): { instructions: Instruction[]; stages: Stage[]; globalArgs: Map<string, string> } {
  const joined = text.split('\n').filter((line) => !/^\s*#/.test(line)).join('\n').replace(/\\\n/g, ' ');
  const instructions: Instruction[] = [];
  const stages: Stage[] = [];
  const globalArgs = new Map<string, string>();
  for (const line of joined.split('\n')) {
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (match === null) continue;
    const keyword = (match[1] ?? '').toUpperCase();
    const args = (match[2] ?? '').trim();
    if (keyword === 'FROM') {
      const from = /^(?:--platform=(\S+)\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (from === null) throw new Error(`unreadable FROM ${args}`);
      stages.push({ platform: from[1], image: from[2] ?? '', name: from[3] });
    } else if (keyword === 'ARG' && stages.length === 0) {
      const [name, value] = args.split('=', 2);
      globalArgs.set(name ?? '', value ?? '');
    }
    instructions.push({ keyword, args, stage: stages.length - 1 });
  }
  return { instructions, stages, globalArgs };
}

const dockerfile = parseDockerfile(readFileSync(join(root, 'Dockerfile'), 'utf8'));
const finalStage = dockerfile.stages.length - 1;
const inStage = (stage: number, keyword: string): Instruction[] => dockerfile.instructions.filter((i) => i.stage === stage && i.keyword === keyword);
const stageIndex = (name: string): number => dockerfile.stages.findIndex((s) => s.name === name);
const entrypoint = (): string[] => {
  const [last] = inStage(finalStage, 'ENTRYPOINT').slice(-1);
  return JSON.parse(last?.args ?? 'null') as string[];
};

const scratch = join(root, 'out');
mkdirSync(scratch, { recursive: true });
// Under the repo (as /app/job in the image): the bundle's imports resolve from the repo's node_modules.
const work = mkdtempSync(join(scratch, 'dockerfile-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function node(args: readonly string[], cwd: string): { status: number | null; stdout: string; stderr: string } {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SLUICE_')));
  const out = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 120_000, env: { ...env, NODE_ENV: 'production' } });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr };
}

describe('worker image (Dockerfile)', { timeout: 150_000 }, () => {
  it('pins the base image by exact tag and digest, for linux/amd64, in every stage', () => {
    const base = dockerfile.globalArgs.get('NODE_IMAGE');
    expect(base).toMatch(/^node:\d+\.\d+\.\d+-bookworm-slim@sha256:[0-9a-f]{64}$/);
    // At least the Node.js that package.json's engines ask for.
    const engines = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    expect(Number(/^node:(\d+)/.exec(base ?? '')?.[1])).toBeGreaterThanOrEqual(Number(/(\d+)/.exec(engines)?.[1]));
    expect(dockerfile.stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of dockerfile.stages) {
      expect(stage.image).toBe('${NODE_IMAGE}');
      expect(stage.platform).toBe('linux/amd64');
    }
  });

  it('installs production dependencies only, and the worker stage runs as a non-root user', () => {
    const runs = dockerfile.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    const installs = runs.filter((r) => /\bnpm (ci|install|i)\b/.test(r));
    expect(installs.length).toBeGreaterThan(0);
    for (const run of installs) {
      expect(run).toMatch(/\bnpm ci\b/);
      expect(run).toContain('--omit=dev');
    }
    // The worker stage's node_modules come from the stage that ran `npm ci --omit=dev`.
    const modules = inStage(finalStage, 'COPY').find((c) => /\/node_modules\b/.test(c.args));
    const from = /--from=(\S+)/.exec(modules?.args ?? '')?.[1] ?? '';
    expect(inStage(stageIndex(from), 'RUN').some((r) => r.args.includes('npm ci --omit=dev'))).toBe(true);
    const user = inStage(finalStage, 'USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user);
    // Nothing after USER runs as root again: the ENTRYPOINT ends the stage.
    expect(dockerfile.instructions.filter((i) => i.stage === finalStage).at(-1)?.keyword).toBe('ENTRYPOINT');
  });

  it('bundles the JOB build arg with esbuild and runs `sluice worker` on the bundle', () => {
    const build = inStage(stageIndex('build'), 'RUN').find((r) => r.args.includes('scripts/bundle-job.mjs'));
    expect(build?.args).toMatch(/node scripts\/bundle-job\.mjs "\$\{JOB\}" (\S+)/);
    expect(inStage(stageIndex('build'), 'ARG').map((a) => a.args)).toContain('JOB');
    const bundled = /bundle-job\.mjs "\$\{JOB\}" (\S+)/.exec(build?.args ?? '')?.[1] ?? '';
    const copied = inStage(finalStage, 'COPY').find((c) => c.args.includes(`--from=build ${bundled}`));
    const imageJob = copied?.args.split(/\s+/).at(-1)?.replace(/^\.\//, '/app/');
    const [command, sub, job] = entrypoint();
    expect([command, sub]).toEqual(['sluice', 'worker']);
    expect(job).toBe(imageJob);
    // `sluice` is bin/sluice.js on the PATH.
    expect(inStage(finalStage, 'RUN').some((r) => r.args.includes('ln -s /app/bin/sluice.js /usr/local/bin/sluice'))).toBe(true);
  });

  it('copies only sources that exist and that .dockerignore lets into the context; keeps node_modules and .git out', () => {
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', '.git', 'test']));
    for (const copy of dockerfile.instructions.filter((i) => i.keyword === 'COPY' && !i.args.includes('--from='))) {
      const sources = copy.args.split(/\s+/).slice(0, -1);
      for (const source of sources.filter((s) => s !== '.')) {
        expect(existsSync(join(root, source)), `COPY ${source}`).toBe(true);
        expect(ignored, `COPY ${source} is excluded by .dockerignore`).not.toContain(source.split('/')[0]);
      }
    }
    expect(ignored).not.toContain(JOB.split('/')[0]);
  });

  it('runs the ENTRYPOINT as the image would: --help lists the bundled job\'s flags; missing worker flags exit 2', () => {
    const build = inStage(stageIndex('build'), 'RUN').find((r) => r.args.includes('scripts/bundle-job.mjs'))?.args ?? '';
    // The build step's own command, with JOB set and its output under this test's folder.
    const [script] = /scripts\/bundle-job\.mjs/.exec(build) ?? [];
    const bundle = join(work, 'job', 'job.mjs');
    const bundled = node([join(root, script ?? 'missing'), JOB, bundle], root);
    expect(bundled.status, bundled.stderr).toBe(0);
    const text = readFileSync(bundle, 'utf8');
    // The engine and the dependencies stay imports (one copy of lib/, RocksDB where npm installed it).
    expect(text).toMatch(/from "sluice"/);
    expect(text).toMatch(/from "sluice\/aws"/);
    expect(text).not.toContain('class StreamEnvironment');

    const [command, ...args] = entrypoint();
    expect(command).toBe('sluice');
    const argv = [join(root, 'bin', 'sluice.js'), ...args.map((a) => (a === '/app/job/job.mjs' ? bundle : a))];
    const cwd = tmpdir();
    const help = node([...argv, '--help'], cwd);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('--job-id');
    expect(help.stdout).toContain('Job flags (kinesis-to-dynamodb)');
    const bad = node([...argv, '--stream', 's', '--table', 't'], cwd);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--job-id');
  });

  it('refuses a job that imports the engine by path, and a build without JOB (exit 2)', () => {
    const bad = join(work, 'bad-job.ts');
    writeFileSync(bad, "import { defineJob } from '../../lib/index.ts';\nexport default defineJob({ name: 'bad', flags: {}, build() {} });\n");
    const out = node([join(root, 'scripts', 'bundle-job.mjs'), bad, join(work, 'bad.mjs')], root);
    expect(out.status).toBe(2);
    expect(out.stderr).toContain("import it as 'sluice'");
    expect(existsSync(join(work, 'bad.mjs'))).toBe(false);
    const usage = node([join(root, 'scripts', 'bundle-job.mjs')], root);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('--build-arg JOB=');
  });
});
