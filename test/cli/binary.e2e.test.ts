/**
 * The real binary, as a user or a CI job runs it: `node bin/gnnctl.js <command> <flags>`. Each command is
 * run once with its flags and `--json` on tiny synthetic data (the whole pipeline, in order, so later
 * commands read what earlier ones wrote), and once with a bad flag value, which must exit 2 naming the
 * flag before any work starts. Flag parsing bugs hid last round because tests called the command
 * functions directly; these do not.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram, leafCommands } from '../../src/cli/main.js';
import { pipelineConfig, sqlRows, sqlPath } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gnnctl.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  json: Record<string, unknown>;
}

function gnnctl(args: string[], cwd: string): Run {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 110_000, env: { ...process.env, NO_COLOR: '1' } });
  const last = r.stdout.trim().split('\n').pop() ?? '';
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(last) as Record<string, unknown>;
  } catch {
    // not a --json run, or a failed one: the assertions on `code` say what went wrong
  }
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json };
}

/** A port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** A bad value: exit 2, the flag named on stderr, and with --json an error object on stdout. */
function expectRefused(r: Run, flag: string): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toContain(flag);
  expect(r.json).toMatchObject({ error: 'UsageError', exit_code: 2 });
  expect(String(r.json.message)).toContain(flag);
}

describe('every command has an example in --help', () => {
  for (const cmd of leafCommands(buildProgram())) {
    const path: string[] = [];
    for (let c: typeof cmd | null = cmd; c?.parent; c = c.parent) path.unshift(c.name());
    it(`gnnctl ${path.join(' ')} --help`, () => {
      const r = gnnctl([...path, '--help'], process.cwd());
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/Examples:\n\s+\$ gnnctl /);
      expect(r.stdout).toContain(`$ gnnctl ${path.join(' ')}`);
    });
  }
});

describe('root flags', () => {
  it('--version prints the version; an unknown command exits 2', () => {
    expect(gnnctl(['--version'], process.cwd()).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(gnnctl(['trian'], process.cwd()).code).toBe(2);
  });

  it('a reader that closes the pipe early (`| head -1`) stops the command quietly, exit 0', async () => {
    const child = spawn(process.execPath, [BIN, 'config', 'reference'], { stdio: ['ignore', 'pipe', 'pipe'] });
    // Our end closes before gnnctl writes anything (it is still starting), so its first write meets EPIPE.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(code).toBe(0);
  });
});

describe('bad values exit 2 before any work, naming the flag', () => {
  let fx: SynthFixture;
  beforeAll(async () => {
    fx = await tinySynth(pipelineConfig());
  });
  afterAll(() => fx.cleanup());

  const cases: [string, string[], string][] = [
    ['datasets synth --seed', ['datasets', 'synth', '--out', 'x', '--seed', '-3'], '--seed'],
    ['train --epochs', ['train', '--config', 'CONFIG', '--task', 'churn', '--epochs', 'abc'], '--epochs'],
    ['train --epochs 0', ['train', '--config', 'CONFIG', '--task', 'churn', '--epochs', '0'], '--epochs'],
    ['distill --epochs', ['distill', '--config', 'CONFIG', '--epochs', '2.5'], '--epochs'],
    ['embed --anchor-time', ['embed', '--config', 'CONFIG', '--run', 'latest:churn', '--anchor-time', 'yesterday'], '--anchor-time'],
    ['embed --shard', ['embed', '--config', 'CONFIG', '--run', 'latest:churn', '--shard', '4/3'], '--shard'],
    ['embed --mode', ['embed', '--config', 'CONFIG', '--run', 'latest:churn', '--mode', 'fast'], '--mode'],
    ['predict --shard', ['predict', '--config', 'CONFIG', '--run', 'latest:churn', '--shard', '1/1'], '--shard'],
    ['predict --mode', ['predict', '--config', 'CONFIG', '--run', 'latest:churn', '--mode', 'fast'], '--mode'],
    ['predict --anchor-time', ['predict', '--config', 'CONFIG', '--run', 'latest:churn', '--anchor-time', '2020-02-30'], '--anchor-time'],
    ['export --version', ['export', '--config', 'CONFIG', '--run', 'latest:fraud', '--version', 'five'], '--version'],
    ['pipeline --distill-epochs', ['pipeline', '--config', 'CONFIG', '--distill-epochs', '-1'], '--distill-epochs'],
    ['check --now', ['check', '--now', '2020-13-01'], '--now'],
    ['check --drift-threshold', ['check', '--drift-threshold', '0'], '--drift-threshold'],
    ['check --drift-window', ['check', '--drift-window', 'soon'], '--drift-window'],
    ['serve --port', ['serve', '--model-repository', 'x', '--port', '70000'], '--port'],
    ['serve --max-body-size', ['serve', '--model-repository', 'x', '--max-body-size', 'lots'], '--max-body-size'],
    ['serve --poll-interval', ['serve', '--model-repository', 'x', '--poll-interval', 'soon'], '--poll-interval'],
    ['serve --drain-delay', ['serve', '--model-repository', 'x', '--drain-delay', 'soon'], '--drain-delay'],
    ['bench serve --rate', ['bench', 'serve', '--url', 'http://127.0.0.1:1', '--model', 'm', '--rate', '0', '--duration', '1'], '--rate'],
    ['doctor --backend', ['doctor', '--backend', 'gpu'], '--backend'],
    ['datasets synth-mesh --services', ['datasets', 'synth-mesh', '--out', 'x', '--services', '5'], '--services'],
    ['anomaly fit --until', ['anomaly', 'fit', '--config', 'CONFIG', '--until', 'yesterday'], '--until'],
    ['anomaly score --to', ['anomaly', 'score', '--config', 'CONFIG', '--run', 'latest', '--to', '2026-02-30'], '--to'],
    ['anomaly watch --port', ['anomaly', 'watch', '--config', 'CONFIG', '--run', 'latest', '--port', '70000'], '--port'],
  ];
  for (const [name, args, flag] of cases) {
    it(name, () => {
      const r = gnnctl([...args.map((a) => (a === 'CONFIG' ? fx.config : a)), '--json'], fx.dir);
      expectRefused(r, flag);
      // Refused before any work: nothing was written.
      expect(existsSync(join(fx.dir, 'artifacts'))).toBe(false);
      expect(readdirSync(fx.artifacts)).toEqual([]);
    });
  }
});

describe('the pipeline, command by command, through the binary', () => {
  let fx: SynthFixture;
  let cwd: string;
  const cfg = () => ['--config', fx.config, '--artifacts', fx.artifacts];
  beforeAll(async () => {
    fx = await tinySynth(pipelineConfig());
    cwd = fx.dir;
  });
  afterAll(() => fx.cleanup());

  it('config validate and graph build / inspect', () => {
    const v = gnnctl(['config', 'validate', '--config', fx.config, '--json'], cwd);
    expect(v.code, v.stderr).toBe(0);
    const b = gnnctl(['graph', 'build', ...cfg(), '--json'], cwd);
    expect(b.code, b.stderr).toBe(0);
    const i = gnnctl(['graph', 'inspect', ...cfg(), '--json'], cwd);
    expect(i.code, i.stderr).toBe(0);
    expect(JSON.stringify(i.json)).toContain('transactions');
    // --features: the tree models' inputs of the task, each with its reason; a value on the boolean flag is refused
    const f = gnnctl(['graph', 'inspect', ...cfg(), '--task', 'fraud', '--features', '--json'], cwd);
    expect(f.code, f.stderr).toBe(0);
    const listing = (f.json.features as { aggregates: { name: string; reason: string }[] }[])[0]!;
    expect(listing.aggregates.length).toBeGreaterThan(0);
    for (const a of listing.aggregates) expect(a.reason.length).toBeGreaterThan(0);
    const bad = gnnctl(['graph', 'inspect', ...cfg(), '--features', 'yes', '--json'], cwd);
    expect(bad.code).toBe(2);
  });

  it('train --epochs 1 trains one epoch; runs list shows it', () => {
    const t = gnnctl(['train', ...cfg(), '--task', 'fraud', '--epochs', '1', '--backend', 'wasm', '--json'], cwd);
    expect(t.code, t.stderr).toBe(0);
    expect(t.json.status).toBe('complete');
    expect(t.json.best_epoch).toBe(1);
    expect((t.json.epochs as unknown[] | undefined)?.length ?? 1).toBe(1);
    const l = gnnctl(['runs', 'list', ...cfg(), '--json'], cwd);
    expect(l.code, l.stderr).toBe(0);
    expect(JSON.stringify(l.json)).toContain(String(t.json.run_id));
    const shown = gnnctl(['runs', 'show', String(t.json.run_id), ...cfg(), '--json'], cwd);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.json.run_id).toBe(t.json.run_id);
    expect((shown.json.metrics as { chosen?: string }).chosen).toBeDefined();
    const missing = gnnctl(['runs', 'show', 'fraud-20000101-000000-0000', ...cfg(), '--json'], cwd);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/fraud-20000101-000000-0000/);
  });

  it('embed --anchor-time with an offset --shard 1/2 writes a part file DuckDB reads', async () => {
    const out = join(fx.artifacts, 'emb', 'customers.parquet');
    const e = gnnctl(['embed', ...cfg(), '--run', 'latest:fraud', '--table', 'customers', '--anchor-time', '2020-09-01T02:00:00+02:00', '--shard', '1/2', '--out', out, '--json'], cwd);
    expect(e.code, e.stderr).toBe(0);
    const path = String(e.json.out ?? e.json.path ?? e.json.file);
    expect(existsSync(path)).toBe(true);
    const rows = await sqlRows(`SELECT count(*)::INT AS n, min(anchor_time)::VARCHAR AS t FROM read_parquet(${sqlPath(path)})`);
    expect(rows[0]!.n).toBeGreaterThan(0);
    expect(String(rows[0]!.t)).toContain('2020-09-01 00:00:00');
  });

  it('distill --epochs 1, export --version 5 writes version 5, check and report read it', () => {
    const d = gnnctl(['distill', ...cfg(), '--base', 'latest:fraud', '--epochs', '1', '--backend', 'wasm', '--json'], cwd);
    expect(d.code, d.stderr).toBe(0);
    expect(typeof (d.json.metrics as { teacher_ap_ratio: unknown }).teacher_ap_ratio).toBe('number');
    // A CI gate on the top of the ranking: an impossible bar fails the job with exit 4 and the result.
    const gated = gnnctl(['distill', ...cfg(), '--base', 'latest:fraud', '--epochs', '1', '--backend', 'wasm', '--fail-under', 'distill.teacher_ap_ratio=100', '--json'], cwd);
    expect(gated.code, gated.stderr).toBe(4);
    expect(gated.stderr).toContain('distill.teacher_ap_ratio');
    // --json: the failed gate's result (with the figure that failed) on stdout
    expect(gated.json.exit_code).toBe(4);
    expect(typeof (gated.json.result as { metrics: { teacher_ap_ratio: unknown } }).metrics.teacher_ap_ratio).toBe('number');
    const repo = join(fx.artifacts, 'repo');
    const x = gnnctl(['export', ...cfg(), '--run', String(d.json.run_id), '--out', repo, '--version', '5', '--json'], cwd);
    expect(x.code, x.stderr).toBe(0);
    expect(x.json.version).toBe(5);
    expect(x.stdout).not.toMatch(/^\d+\.\d+\.\d+\s*$/m);
    const name = String(x.json.model);
    expect(existsSync(join(repo, name, '5', 'model.onnx'))).toBe(true);
    expect(existsSync(join(repo, name, 'config.pbtxt'))).toBe(true);

    const c = gnnctl(['check', '--model-repository', repo, '--now', '2020-09-23T00:00:00+00:00', '--drift-threshold', '0.3', '--drift-window', '14d', '--json'], cwd);
    expect([0, 4]).toContain(c.code);
    expect(c.json).toHaveProperty('checks');

    const report = join(fx.artifacts, 'report.html');
    const r = gnnctl(['report', String(d.json.run_id), '--artifacts', fx.artifacts, '--out', report, '--json'], cwd);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(report)).toBe(true);
  });

  it('serve answers a health probe, then stops on SIGTERM with --json', async () => {
    const repo = join(fx.artifacts, 'repo');
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, 'serve', '--model-repository', repo, '--port', String(port), '--poll-interval', '500ms', '--json'], { cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    let status = 0;
    for (let i = 0; i < 600 && status !== 200; i++) {
      status = await fetch(`http://127.0.0.1:${port}/v2/health/ready`).then((r) => r.status, () => 0);
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status, stderr).toBe(200);
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, stderr).toBe(0);
    const result = JSON.parse(stdout.trim().split('\n').pop()!) as { stopped_by: string };
    expect(result.stopped_by).toBe('SIGTERM');
  });

  it('config reference and doctor --json', () => {
    const ref = gnnctl(['config', 'reference'], cwd);
    expect(ref.code).toBe(0);
    expect(ref.stdout).toContain('fit_until');
    const d = gnnctl(['doctor', '--backend', 'wasm', '--json'], cwd);
    expect(d.code, d.stderr).toBe(0);
    expect(d.json.ok).toBe(true);
  });
});
