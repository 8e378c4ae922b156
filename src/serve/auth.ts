/**
 * Bearer-token authentication (RFC 6750) for `gnnctl serve --auth-token-file FILE`.
 *
 * The file holds one token per line (blank lines and `#` comments are skipped), so a token can be rotated
 * without downtime: add the new one, roll the clients, remove the old one (the file is read at start; a
 * restart or a new pod picks up changes, as Kubernetes Secrets are mounted).
 *
 * A request must send `Authorization: Bearer <token>`. Each presented token is compared with every
 * configured one in constant time: both sides are hashed with SHA-256 first, so `timingSafeEqual` sees
 * equal lengths and the comparison time says nothing about the token's length or its common prefix with
 * a real one; every configured token is compared (no early exit). Failures answer 401 with a
 * `WWW-Authenticate` challenge (with `error="invalid_request"` for a malformed header and
 * `error="invalid_token"` for a wrong token, none when no token was sent), and never echo the token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { UsageError } from '../core/errors.js';
import { HttpError } from './http_error.js';

export const AUTH_REALM = 'gnnctl';

export class BearerAuth {
  readonly tokens: readonly string[];
  private readonly digests: Buffer[];

  constructor(tokens: readonly string[]) {
    if (tokens.length === 0) throw new UsageError('bearer-token authentication needs at least one token');
    this.tokens = [...tokens];
    this.digests = tokens.map(sha256);
  }

  /** Reads the tokens of `--auth-token-file`; a missing, unreadable or empty file is a usage error. */
  static fromFile(path: string): BearerAuth {
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
    return new BearerAuth(tokens);
  }

  /** Throws HTTP 401 unless the `Authorization` header carries one of the tokens. */
  check(authorization: string | undefined): void {
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

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

function challenge(error: 'invalid_request' | 'invalid_token' | undefined, message: string): HttpError {
  return new HttpError(401, message, { 'WWW-Authenticate': `Bearer realm="${AUTH_REALM}"${error ? `, error="${error}"` : ''}` });
}
