/**
 * Bearer-token authentication (RFC 6750) for `gnnctl serve --auth-token-file FILE`.
 *
 * The file holds one token per line (blank lines and `#` comments are skipped), so a token can be rotated
 * without downtime: add the new one, roll the clients, remove the old one. The running server notices a
 * changed file within a second (a stat at most once a second, on requests), as it does when Kubernetes
 * updates a mounted Secret; a file that becomes unreadable or empty keeps the previous tokens in force
 * (and says so in the log) rather than locking every client out or letting every client in.
 *
 * A request must send `Authorization: Bearer <token>`. Each presented token is compared with every
 * configured one in constant time: both sides are hashed with SHA-256 first, so `timingSafeEqual` sees
 * equal lengths and the comparison time says nothing about the token's length or its common prefix with
 * a real one; every configured token is compared (no early exit). Failures answer 401 with a
 * `WWW-Authenticate` challenge (with `error="invalid_request"` for a malformed header and
 * `error="invalid_token"` for a wrong token, none when no token was sent), and never echo the token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { UsageError } from '../core/errors.js';
import { HttpError } from './http_error.js';

export const AUTH_REALM = 'gnnctl';

/** Where tokens came from, for reloading: the file and what it was when last read. */
interface TokenSource {
  path: string;
  fingerprint: string;
  checkedAt: number;
  log?: (line: string, level: 'info' | 'warn') => void;
}

export class BearerAuth {
  private tokenList: string[];
  private digests: Buffer[];
  private readonly source?: TokenSource;

  constructor(tokens: readonly string[], source?: Omit<TokenSource, 'fingerprint' | 'checkedAt'>) {
    if (tokens.length === 0) throw new UsageError('bearer-token authentication needs at least one token');
    this.tokenList = [...tokens];
    this.digests = tokens.map(sha256);
    if (source) this.source = { ...source, fingerprint: fingerprint(source.path), checkedAt: performance.now() };
  }

  /** The tokens in force. */
  get tokens(): readonly string[] {
    return this.tokenList;
  }

  /**
   * Reads the tokens of `--auth-token-file` (a missing, unreadable or empty file is a usage error) and
   * keeps watching the file for changes; `log` hears about reloads.
   */
  static fromFile(path: string, log?: TokenSource['log']): BearerAuth {
    return new BearerAuth(readTokenFile(path), { path, log });
  }

  /** Re-reads the file when it changed (at most one stat per second). */
  private maybeReload(): void {
    const src = this.source!;
    const now = performance.now();
    if (now - src.checkedAt < 1000) return;
    src.checkedAt = now;
    const fp = fingerprint(src.path);
    if (fp === src.fingerprint) return;
    src.fingerprint = fp;
    try {
      const tokens = readTokenFile(src.path);
      this.tokenList = tokens;
      this.digests = tokens.map(sha256);
      src.log?.(`--auth-token-file changed: ${tokens.length} token${tokens.length > 1 ? 's' : ''} in force`, 'info');
    } catch (e) {
      src.log?.(`--auth-token-file changed but cannot be used (${(e as Error).message}); the previous ${this.tokenList.length} token(s) stay in force`, 'warn');
    }
  }

  /** Throws HTTP 401 unless the `Authorization` header carries one of the tokens. */
  check(authorization: string | undefined): void {
    if (this.source) this.maybeReload();
    if (authorization === undefined || authorization === '') {
      // RFC 6750 §3.1: no error code when the request carried no credentials at all.
      throw challenge(undefined, 'this server requires a bearer token: send "Authorization: Bearer <token>"');
    }
    const m = /^Bearer +(\S+) *$/i.exec(authorization);
    if (!m) throw challenge('invalid_request', 'the Authorization header must be "Bearer <token>"');
    const presented = sha256(m[1]!);
    let ok = false;
    // No early exit: the time does not tell which token (if any) matched.
    for (const d of this.digests) ok = timingSafeEqual(presented, d) || ok;
    if (!ok) throw challenge('invalid_token', 'the bearer token is not valid');
  }
}

/** Changes when the file is rewritten or replaced (a Kubernetes Secret update swaps a symlink). */
function fingerprint(path: string): string {
  try {
    const st = statSync(path);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

/** The tokens of a token file: one per line, blank lines and `#` comments skipped. */
export function readTokenFile(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read --auth-token-file: ${(e as Error).message}`, { value: path, hint: 'pass a file with one bearer token per line' });
  }
  const tokens = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  if (tokens.length === 0) throw new UsageError('--auth-token-file holds no token', { value: path, hint: 'write one bearer token per line (blank lines and # comments are skipped)' });
  const bad = tokens.findIndex((t) => !/^[A-Za-z0-9\-._~+/]+=*$/.test(t));
  if (bad >= 0) {
    throw new UsageError(`--auth-token-file: token ${bad + 1} is not a valid bearer token (RFC 6750 allows letters, digits and -._~+/ with trailing =)`, {
      value: path,
      hint: 'generate one with e.g. `openssl rand -hex 32`',
    });
  }
  return tokens;
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

function challenge(error: 'invalid_request' | 'invalid_token' | undefined, message: string): HttpError {
  return new HttpError(401, message, { 'WWW-Authenticate': `Bearer realm="${AUTH_REALM}"${error ? `, error="${error}"` : ''}` });
}
