/**
 * The process's open-file limit and the connection cap `gnnctl serve` derives from it.
 *
 * Every connection holds a file descriptor; when they run out, `accept` fails for probes and clients
 * alike and the repository scan fails with EMFILE. The default cap leaves headroom below the soft limit
 * (`ulimit -n`) for model files, the repository scan, log files and the accepts that the connection guard
 * immediately closes under a flood.
 */
import { readFileSync } from 'node:fs';

/** When the limit cannot be read (not Linux): the common default soft limit. */
const FALLBACK_FD_LIMIT = 1024;

/** The soft limit on open files of this process, from /proc/self/limits (Linux); 1024 elsewhere. */
export function openFileLimit(limitsText?: string): number {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return FALLBACK_FD_LIMIT;
    }
  }
  const m = /^Max open files\s+(\S+)/m.exec(text);
  if (!m) return FALLBACK_FD_LIMIT;
  // "unlimited" cannot be set for open files on Linux, but a number is what the kernel's nr_open caps.
  const n = m[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(m[1]);
  return Number.isFinite(n) && n > 0 ? n : FALLBACK_FD_LIMIT;
}

/**
 * The default `--max-connections`: the fd limit minus a tenth of it, at least 128 descriptors of
 * headroom, and at least 16 connections.
 */
export function defaultMaxConnections(fdLimit = openFileLimit()): number {
  const headroom = Math.max(128, Math.ceil(fdLimit / 10));
  return Math.max(16, Math.min(fdLimit - headroom, 1_000_000));
}

/** The headroom `defaultMaxConnections` keeps, for the warning when `--max-connections` eats into it. */
export function fdHeadroom(fdLimit = openFileLimit()): number {
  return fdLimit - defaultMaxConnections(fdLimit);
}
