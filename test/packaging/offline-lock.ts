import { readFileSync } from 'node:fs';

interface LockEntry {
  readonly dev?: boolean;
  readonly [field: string]: unknown;
}

interface PackageLock {
  readonly packages: Record<string, LockEntry>;
}

/**
 * package.json and package-lock.json of a fresh project that depends on the packed tarball only. The lock pins every
 * runtime dependency to the repo's own lock entries (resolved URL and integrity), so `npm install` takes each tarball
 * from the npm cache that `npm ci` filled, without asking the registry for package metadata: the tests run in a
 * network namespace with no network at all.
 */
export function freshProject(repoLockPath: string, tarball: string, manifest: { name: string; version: string; dependencies: Record<string, string>; bin: Record<string, string>; engines?: Record<string, string> }): {
  packageJson: string;
  packageLock: string;
} {
  const repoLock = JSON.parse(readFileSync(repoLockPath, 'utf8')) as PackageLock;
  const dependency = `file:${tarball}`;
  const packages: Record<string, unknown> = {
    '': { name: 'sluice-user', dependencies: { [manifest.name]: dependency } },
    [`node_modules/${manifest.name}`]: {
      version: manifest.version,
      resolved: dependency,
      dependencies: manifest.dependencies,
      bin: manifest.bin,
      ...(manifest.engines === undefined ? {} : { engines: manifest.engines }),
    },
  };
  for (const [path, entry] of Object.entries(repoLock.packages)) {
    // devOptional: needed by a dev dependency and optionally by a runtime one (detect-libc), so a user may get it too.
    if (path.startsWith('node_modules/') && entry.dev !== true) packages[path] = entry;
  }
  return {
    packageJson: `${JSON.stringify({ name: 'sluice-user', private: true, type: 'module', dependencies: { [manifest.name]: dependency } }, null, 2)}\n`,
    packageLock: `${JSON.stringify({ name: 'sluice-user', lockfileVersion: 3, requires: true, packages }, null, 2)}\n`,
  };
}
