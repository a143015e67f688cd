/**
 * DynamoDB Local listens on every interface: the dev scripts (examples/dev-aws.ts, scripts/cluster/dev-cluster.ts)
 * run themselves again inside a private network namespace (unshare -rn, loopback up) when the machine allows one.
 */
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Runs `main` and exits with its code when already inside the namespace (SLUICE_TEST_NETNS=1, as the test harness
 * sets) or when SLUICE_ALLOW_PUBLIC_DYNAMODB_LOCAL=1; otherwise runs the script at `entryUrl` (its import.meta.url)
 * with the same arguments in a new namespace and exits with its code. Exits 2 when no namespace can be created.
 */
export async function runInPrivateNetwork(name: string, entryUrl: string, main: () => Promise<number>): Promise<void> {
  if (process.env['SLUICE_TEST_NETNS'] === '1' || process.env['SLUICE_ALLOW_PUBLIC_DYNAMODB_LOCAL'] === '1') {
    process.exit(await main());
  }
  const probe = spawnSync('unshare', ['-rn', 'sh', '-c', 'ip link set lo up'], { stdio: 'ignore' });
  if (probe.status !== 0) {
    console.error(
      `${name}: cannot create a private network namespace (unshare -rn); DynamoDB Local would listen on every interface. ` +
        'Set SLUICE_ALLOW_PUBLIC_DYNAMODB_LOCAL=1 to run anyway.',
    );
    process.exit(2);
  }
  const self = fileURLToPath(entryUrl);
  const tsx = fileURLToPath(new URL('../../../node_modules/tsx/dist/cli.mjs', import.meta.url));
  const quoted = [process.execPath, tsx, self, ...process.argv.slice(2)].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const child = spawn('unshare', ['-rn', 'sh', '-c', `ip link set lo up && exec ${quoted}`], {
    stdio: 'inherit',
    env: { ...process.env, SLUICE_TEST_NETNS: '1' },
  });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
