import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

/** The lint rules of eslint.config.js, run on probe files that exist only in memory. */
const root = fileURLToPath(new URL('../../../', import.meta.url));
const lib = `${root}lib`;

interface Layer {
  folder: string;
  mayImport: string[];
}

let layers: Layer[];
let eslint: ESLint;

beforeAll(async () => {
  const config = (await import(new URL('../../../eslint.config.js', import.meta.url).href)) as { LAYERS: Layer[] };
  layers = config.LAYERS;
  eslint = new ESLint({ cwd: root });
});

/** Rule ids eslint reports for `code` as if it were the file `path` (relative to the repository). */
async function violations(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}${path}` });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

/** Some module of lib/<folder> to import. */
function moduleOf(folder: string): string {
  const files = readdirSync(`${lib}/${folder}`).filter((f) => f.endsWith('.ts'));
  return files.includes('index.ts') ? 'index.ts' : files.sort()[0]!;
}

describe('layers of lib/', () => {
  it('cover every folder of lib/, each importing only layers below it', () => {
    const folders = readdirSync(lib, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
    expect(layers.map((l) => l.folder).sort()).toEqual(folders.sort());
    layers.forEach((layer, i) => {
      for (const lower of layer.mayImport) expect(layers.findIndex((l) => l.folder === lower)).toBeLessThan(i);
    });
  });

  it('refuse every import a layer is not allowed and accept the allowed ones', async () => {
    for (const layer of layers) {
      for (const other of layers) {
        if (other === layer) continue;
        const found = await violations(`lib/${layer.folder}/probe.ts`, `export * from '../${other.folder}/${moduleOf(other.folder)}';\n`);
        const allowed = layer.mayImport.includes(other.folder);
        expect({ from: layer.folder, to: other.folder, refused: found.includes('import-x/no-restricted-paths') }).toEqual({
          from: layer.folder,
          to: other.folder,
          refused: !allowed,
        });
      }
      const publicApi = await violations(`lib/${layer.folder}/probe.ts`, `export * from '../index.ts';\n`);
      expect(publicApi).toContain('import-x/no-restricted-paths');
    }
  });

  it('keep lib/checkpoint to itself and lib/core, and lib/core to itself', async () => {
    expect(await violations('lib/checkpoint/sub/probe.ts', "export * from '../../storage/checkpoint-storage.ts';\n")).toContain(
      'import-x/no-restricted-paths',
    );
    expect(await violations('lib/checkpoint/probe.ts', "export * from '../core/index.ts';\nexport * from './types.ts';\n")).toEqual([]);
    expect(await violations('lib/core/probe.ts', "export * from './index.ts';\n")).toEqual([]);
  });

  it('keep the RocksDB backend out of lib/operators and the other state folders', async () => {
    expect(await violations('lib/state/rocksdb/probe.ts', "export * from '../../operators/operator.ts';\n")).toContain(
      'import-x/no-restricted-paths',
    );
    expect(await violations('lib/state/rocksdb/probe.ts', "export * from '../timers/timer-service.ts';\n")).toEqual([]);
    for (const path of ['lib/state/probe.ts', 'lib/state/memory/probe.ts', 'lib/state/timers/probe.ts']) {
      const spec = path === 'lib/state/probe.ts' ? './rocksdb/index.ts' : '../rocksdb/index.ts';
      expect(await violations(path, `export * from '${spec}';\n`)).toContain('import-x/no-restricted-paths');
    }
  });

  it('keep AWS implementations out of lib/runtime and of the local connectors', async () => {
    const aws = "export * from '../../connectors/aws/index.ts';\n";
    expect(await violations('lib/runtime/threads/probe.ts', aws)).toContain('import-x/no-restricted-paths');
    expect(await violations('lib/connectors/local/probe.ts', "export * from '../aws/index.ts';\n")).toContain(
      'import-x/no-restricted-paths',
    );
    expect(await violations('lib/cli/sub/probe.ts', aws)).toEqual([]);
  });

  it('refuse plain Errors in lib/, not typed ones', async () => {
    expect(await violations('lib/runtime/probe.ts', "export const e = new Error('x');\n")).toContain('no-restricted-syntax');
    expect(await violations('lib/runtime/probe.ts', "export const e = Error('x');\n")).toContain('no-restricted-syntax');
    expect(
      await violations('lib/runtime/probe.ts', "import { InternalError } from '../core/index.ts';\nexport const e = new InternalError('x');\n"),
    ).toEqual([]);
    expect(await violations('test/unit/probe.ts', "export const e = new Error('x');\n")).toEqual([]);
  });
});
