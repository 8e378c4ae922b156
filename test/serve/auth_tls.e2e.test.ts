/**
 * Bearer-token authentication and TLS: in process, and through the binary with its flags. The TLS cases
 * use a self-signed certificate made by `openssl` here; without openssl they are skipped with a message.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BearerAuth } from '../../src/serve/auth.js';
import { readTlsFiles } from '../../src/serve/server.js';
import { BIN, spawnServe } from './spawn_serve.js';
import { inferBody, MODEL, sleep, startTestServer, tempRepo, txRequest, waitFor, type TempRepo, type TestServer } from './helpers.js';

const TOKENS = ['s3cret-token-1', 'rotated.token_2'];

async function call(url: string, path: string, options: { method?: string; token?: string; authorization?: string; body?: string } = {}) {
  const headers: Record<string, string> = {};
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.authorization) headers.Authorization = options.authorization;
  const res = await fetch(`${url}${path}`, { method: options.method ?? 'GET', headers, body: options.body });
  return { status: res.status, challenge: res.headers.get('www-authenticate'), text: await res.text() };
}

let dir: string;
let repo: TempRepo;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gnnctl-auth-'));
  repo = tempRepo({ maxBatchSize: 8 });
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  repo?.cleanup();
});

describe('bearer tokens', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(repo.root, { authTokens: TOKENS, authOpenHealth: true });
  });
  afterAll(async () => {
    await server?.stop();
  });
  const infer = `/v2/models/${MODEL}/infer`;

  it('answers 401 with a WWW-Authenticate challenge without a token, with a wrong one, and with another scheme', async () => {
    const none = await call(server.url, infer, { method: 'POST', body: inferBody(txRequest(1, 1)) });
    expect(none).toMatchObject({ status: 401, challenge: 'Bearer realm="gnnctl"' });
    expect(JSON.parse(none.text)).toEqual({ error: 'this server requires a bearer token: send "Authorization: Bearer <token>"' });
    const wrong = await call(server.url, infer, { method: 'POST', token: 's3cret-token-2', body: inferBody(txRequest(1, 1)) });
    expect(wrong).toMatchObject({ status: 401, challenge: 'Bearer realm="gnnctl", error="invalid_token"' });
    expect(wrong.text).not.toContain('s3cret-token-2');
    const basic = await call(server.url, '/v2', { authorization: 'Basic dXNlcjpwYXNz' });
    expect(basic).toMatchObject({ status: 401, challenge: 'Bearer realm="gnnctl", error="invalid_request"' });
  });

  it('serves every token of the file, on every route', async () => {
    for (const token of TOKENS) {
      expect((await call(server.url, infer, { method: 'POST', token, body: inferBody(txRequest(2, 2)) })).status).toBe(200);
      expect((await call(server.url, '/metrics', { token })).status).toBe(200);
    }
  });

  it('hides the routes from unauthenticated clients, except the open health probes', async () => {
    expect((await call(server.url, '/v2/nothing-here')).status).toBe(401);
    expect((await call(server.url, `/v2/models/${MODEL}/ready`)).status).toBe(401);
    expect((await call(server.url, '/metrics')).status).toBe(401);
    expect((await call(server.url, '/v2/health/live')).status).toBe(200);
    expect((await call(server.url, '/v2/health/ready')).status).toBe(200);
  });

  it('without --auth-open-health the probes need a token too; --auth-open-metrics opens /metrics', async () => {
    const closed = await startTestServer(repo.root, { authTokens: TOKENS, authOpenMetrics: true });
    try {
      expect((await call(closed.url, '/metrics')).status).toBe(200);
      expect((await call(closed.url, '/v2/health/ready')).status).toBe(401);
      expect((await call(closed.url, '/v2/health/ready', { token: TOKENS[0] })).status).toBe(200);
    } finally {
      await closed.stop();
    }
  });

  it('picks up a rotated token file without a restart, and keeps the old tokens when the new file is unusable', async () => {
    const file = join(dir, 'rotating');
    writeFileSync(file, 'old-token\n');
    const rotating = await startTestServer(repo.root, { authTokenFile: file });
    try {
      expect((await call(rotating.url, '/v2', { token: 'old-token' })).status).toBe(200);
      writeFileSync(file, '# rotated\nnew-token\n');
      // The file is looked at most once a second.
      await waitFor(async () => (await call(rotating.url, '/v2', { token: 'new-token' })).status === 200, 10_000, 'the new token');
      expect((await call(rotating.url, '/v2', { token: 'old-token' })).status).toBe(401);
      writeFileSync(file, '\n');
      await sleep(1100);
      expect((await call(rotating.url, '/v2', { token: 'new-token' })).status).toBe(200);
      expect(rotating.logs.join('\n')).toMatch(/--auth-token-file changed but cannot be used \(--auth-token-file holds no token\); the previous 1 token\(s\) stay in force/);
    } finally {
      await rotating.stop();
    }
  });

  it('reads tokens from a file, one per line, skipping blanks and comments; refuses unusable files', () => {
    const file = join(dir, 'tokens');
    writeFileSync(file, '# rotated 2026-11\ns3cret-token-1\n\n  rotated.token_2  \n');
    expect(BearerAuth.fromFile(file).tokens).toEqual(TOKENS);
    writeFileSync(file, '# nothing\n\n');
    expect(() => BearerAuth.fromFile(file)).toThrow(/--auth-token-file holds no token/);
    writeFileSync(file, 'has space inside\n');
    expect(() => BearerAuth.fromFile(file)).toThrow(/token 1 is not a valid bearer token/);
    expect(() => BearerAuth.fromFile(join(dir, 'absent'))).toThrow(/cannot read --auth-token-file/);
  });
});

/** A self-signed certificate for 127.0.0.1, or undefined when openssl is not installed. */
function selfSigned(name: string): { cert: string; key: string } | undefined {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return undefined;
  return { cert, key };
}

const hasOpenssl = spawnSync('openssl', ['version']).status === 0;
if (!hasOpenssl) console.warn('auth_tls.test.ts: openssl is not installed; skipping the TLS tests');

/** An HTTPS request trusting `ca` (the self-signed certificate). */
function httpsCall(url: string, path: string, ca: Buffer, options: { method?: string; token?: string; body?: string } = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${url}${path}`, { method: options.method ?? 'GET', ca, headers: options.token ? { Authorization: `Bearer ${options.token}` } : {} }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

describe.skipIf(!hasOpenssl)('TLS', () => {
  let pair: { cert: string; key: string };
  beforeAll(() => {
    pair = selfSigned('server')!;
  });

  it('serves HTTPS with --tls-cert/--tls-key; plain HTTP on the port gets no answer', async () => {
    const server = await startTestServer(repo.root, { tls: readTlsFiles(pair.cert, pair.key) });
    try {
      expect(server.url).toMatch(/^https:\/\//);
      const ca = readFileSync(pair.cert);
      const r = await httpsCall(server.url, `/v2/models/${MODEL}/infer`, ca, { method: 'POST', body: inferBody(txRequest(3, 2)) });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text)).toMatchObject({ model_name: MODEL });
      await expect(fetch(server.url.replace('https:', 'http:') + '/v2/health/live')).rejects.toThrow();
    } finally {
      await server.stop();
    }
  });

  it('refuses a key that does not match the certificate, and one flag without the other', () => {
    const other = selfSigned('other')!;
    expect(() => readTlsFiles(pair.cert, other.key)).toThrow(/--tls-cert and --tls-key do not make a TLS context/);
    expect(() => readTlsFiles(pair.cert, undefined)).toThrow(/--tls-cert and --tls-key go together/);
    expect(readTlsFiles(undefined, undefined)).toBeUndefined();
  });

  it('the binary: --tls-cert --tls-key --auth-token-file --auth-open-health --json', async () => {
    const tokens = join(dir, 'cli-tokens');
    writeFileSync(tokens, `${TOKENS[0]}\n`);
    const ca = readFileSync(pair.cert);
    const s = await spawnServe(['--model-repository', repo.root, '--tls-cert', pair.cert, '--tls-key', pair.key, '--auth-token-file', tokens, '--auth-open-health', '--json'], {
      scheme: 'https',
      ready: async (u) => (await httpsCall(u, '/v2/health/ready', ca).catch(() => ({ status: 0 }))).status === 200,
    });
    const denied = await httpsCall(s.url, `/v2/models/${MODEL}/infer`, ca, { method: 'POST', body: inferBody(txRequest(1, 1)) });
    expect(denied.status).toBe(401);
    const ok = await httpsCall(s.url, `/v2/models/${MODEL}/infer`, ca, { method: 'POST', token: TOKENS[0], body: inferBody(txRequest(1, 1)) });
    expect(ok.status).toBe(200);
    const { code, stdout } = await s.stop();
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ url: expect.stringMatching(/^https:\/\//), inference_requests: { success: 1, failure: 0 } });
  });
});

describe('bad auth and TLS flags exit 2', () => {
  it.each([
    [['--tls-cert', 'cert.pem'], /--tls-cert and --tls-key go together/],
    [['--auth-token-file', '/nonexistent/tokens'], /cannot read --auth-token-file/],
    [['--auth-open-health'], /--auth-open-health needs --auth-token-file/],
    [['--auth-open-metrics'], /--auth-open-metrics needs --auth-token-file/],
  ])('%j', (flags, message) => {
    const r = spawnSync(process.execPath, [BIN, 'serve', '--model-repository', repo.root, '--port', '0', ...flags], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});
