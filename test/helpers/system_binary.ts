/**
 * Real components a test starts (Chromium, Prometheus, Redis) come from Debian packages that `.ci/run`
 * installs. On a developer's machine without one, its tests skip with a message naming the package; under
 * `CI=true` a missing binary fails them instead, so a CI log that passes has really run them. The one
 * exception is a package the machine's apt sources do not carry: `.ci/run` lists it in
 * `GNNCTL_UNAVAILABLE_PACKAGES` and its tests skip, saying so.
 */
import { spawnSync } from 'node:child_process';

export interface SystemBinaryOptions {
  /** The command to run, or an absolute path. */
  command: string;
  /** The Debian package that provides it. */
  aptPackage: string;
  /** The test file, named in the message. */
  testFile: string;
  /** Arguments of a cheap call that exits 0 when the binary works. */
  probeArgs?: string[];
}

export interface SystemBinary {
  command: string;
  present: boolean;
  /** True only where the test may skip: outside CI, or where the package does not exist in apt. */
  skip: boolean;
  /** Throws, naming the package, when the binary is missing; call it first in `beforeAll`. */
  require(): void;
}

function unavailablePackages(): Set<string> {
  return new Set((process.env.GNNCTL_UNAVAILABLE_PACKAGES ?? '').split(/[\s,]+/).filter(Boolean));
}

export function systemBinary(o: SystemBinaryOptions): SystemBinary {
  const probe = spawnSync(o.command, o.probeArgs ?? ['--version'], { encoding: 'utf8', timeout: 60_000 });
  const present = probe.status === 0;
  const install = `apt-get install -y --no-install-recommends ${o.aptPackage}`;
  const unavailable = unavailablePackages().has(o.aptPackage);
  const ci = process.env.CI === 'true';
  const skip = !present && (!ci || unavailable);
  if (!present) {
    const why = unavailable
      ? `the machine's apt sources have no \`${o.aptPackage}\` package`
      : ci
        ? 'CI=true, so its tests fail instead of skipping'
        : `skipped (${install})`;
    process.stderr.write(`${o.testFile}: no working \`${o.command}\` binary: ${why}\n`);
  }
  return {
    command: o.command,
    present,
    skip,
    require(): void {
      if (!present) throw new Error(`${o.testFile} needs \`${o.command}\` (${probe.error?.message ?? `exit ${probe.status}`}); install it: ${install}`);
    },
  };
}
