#!/usr/bin/env node
// `npm test`: runs vitest inside a private network namespace when the machine allows one (unprivileged user
// namespaces), so that emulators that cannot bind to loopback only (DynamoDB Local listens on every interface) are
// unreachable from outside. Everything the tests start listens on 127.0.0.1 of that namespace. Arguments are passed
// on to vitest. Set SLUICE_TEST_NETNS=0 to run without the namespace (the DynamoDB Local tests then refuse to start
// unless SLUICE_ALLOW_PUBLIC_DYNAMODB_LOCAL=1).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const vitest = fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url));
const args = process.argv.slice(2);
const wanted = process.env.SLUICE_TEST_NETNS !== '0';

function run(command, commandArgs, env) {
  const result = spawnSync(command, commandArgs, { stdio: 'inherit', env });
  if (result.error) throw result.error;
  return result.status ?? (result.signal ? 128 : 1);
}

function namespaceWorks() {
  const probe = spawnSync('unshare', ['-rn', 'sh', '-c', 'ip link set lo up'], { stdio: 'ignore' });
  return probe.status === 0;
}

if (process.env.SLUICE_TEST_NETNS === '1' || !wanted) {
  process.exit(run(process.execPath, [vitest, 'run', ...args], process.env));
}
if (!namespaceWorks()) {
  console.warn(
    'npm test: cannot create a private network namespace (unshare -rn and ip are needed); running without one. ' +
      'Tests that need DynamoDB Local will refuse to start.',
  );
  process.exit(run(process.execPath, [vitest, 'run', ...args], { ...process.env, SLUICE_TEST_NETNS: '0' }));
}
const quoted = [process.execPath, vitest, 'run', ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
process.exit(run('unshare', ['-rn', 'sh', '-c', `ip link set lo up && exec ${quoted}`], { ...process.env, SLUICE_TEST_NETNS: '1' }));
