/**
 * Canary rollouts: the control file's rules, the exact traffic split, and a running server moved through
 * pin → canary at 50% → promote, then canary → rollback, under continuous concurrent requests: every
 * request answered 200, each by the version the rollout says.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolloutCommand, type RolloutCommandOptions } from '../../src/cli/commands/rollout.js';
import { nextRollout, parseRollout, TrafficSplit, type RolloutState } from '../../src/serve/rollout.js';
import { buildSyntheticModel, writeVersionFolder } from '../../src/loadgen/synthetic_model.js';
import { get, infer, inferBody, MODEL, startTestServer, tempRepo, txRequest, type TempRepo, type TestServer } from './helpers.js';
import { BIN } from './spawn_serve.js';

describe('rollout file rules', () => {
  const state = (rollout?: RolloutState['rollout'], available = [1, 2, 3]): RolloutState => ({ model: 'm', file: 'm/rollout.json', rollout, available });
  const now = new Date('2026-11-25T08:00:00Z');
  const stamp = now.toISOString();

  it('start keeps what serves now as stable; set, promote and rollback move from there', () => {
    expect(nextRollout(state(), { kind: 'start', canary: 3, weight: 0.1 }, now)).toEqual({ stable: 2, canary: 3, canary_weight: 0.1, updated_at: stamp });
    expect(nextRollout(state({ stable: 1 }), { kind: 'start', canary: 3, weight: 0.1 }, now)).toMatchObject({ stable: 1, canary: 3 });
    const running = { stable: 1, canary: 3, canary_weight: 0.1 };
    expect(nextRollout(state(running), { kind: 'set', weight: 0.5 }, now)).toEqual({ ...running, canary_weight: 0.5, updated_at: stamp });
    expect(nextRollout(state(running), { kind: 'promote' }, now)).toEqual({ stable: 3, updated_at: stamp });
    expect(nextRollout(state(running), { kind: 'rollback' }, now)).toEqual({ stable: 1, updated_at: stamp });
    expect(nextRollout(state(), { kind: 'pin' }, now)).toEqual({ stable: 3, updated_at: stamp });
    expect(nextRollout(state(running), { kind: 'end' }, now)).toBeUndefined();
  });

  it.each([
    ['a canary that is not a complete version', state(), { kind: 'start', canary: 7, weight: 0.1 }, /has no complete version 7 \(complete versions: 1, 2, 3\)/],
    ['a second canary', state({ stable: 1, canary: 2, canary_weight: 0.1 }), { kind: 'start', canary: 3, weight: 0.1 }, /already has a canary \(version 2 at weight 0.1\)/],
    ['a weight above 1', state({ stable: 1, canary: 2, canary_weight: 0.1 }), { kind: 'set', weight: 1.5 }, /--weight must be a share of traffic between 0 and 1/],
    ['promote without a canary', state({ stable: 1 }), { kind: 'promote' }, /has no canary to promote/],
    ['rollback without a canary', state(), { kind: 'rollback' }, /has no canary to roll back/],
    ['canary equal to stable', state(), { kind: 'start', canary: 2, weight: 0.1, stable: 2 }, /the canary and the stable version are both 2/],
  ] as const)('refuses %s', (_, s, action, message) => {
    expect(() => nextRollout(s, action as never)).toThrow(message);
  });

  it('parses the file strictly, naming every problem', () => {
    expect(parseRollout('{"stable":1,"canary":2,"canary_weight":0.25}', 'f')).toEqual({ stable: 1, canary: 2, canary_weight: 0.25 });
    expect(() => parseRollout('{"stable":1,"canary":2}', 'f')).toThrow(/canary and canary_weight go together/);
    expect(() => parseRollout('{"stable":0,"weight":1}', 'f')).toThrow(/stable: .*; \(file\): Unrecognized key/i);
    expect(() => parseRollout('{', 'f')).toThrow(/rollout.json is not JSON/);
  });

  it('splits traffic exactly, spread evenly', () => {
    const split = new TrafficSplit(0.25);
    const picks = Array.from({ length: 100 }, () => split.next());
    expect(picks.filter(Boolean)).toHaveLength(25);
    expect(picks.slice(0, 8)).toEqual([false, false, false, true, false, false, false, true]);
    expect(Array.from({ length: 10 }, () => new TrafficSplit(0).next()).some(Boolean)).toBe(false);
    const all = new TrafficSplit(1);
    expect(Array.from({ length: 10 }, () => all.next()).every(Boolean)).toBe(true);
  });
});

describe('a running server through a rollout, under load', () => {
  let repo: TempRepo;
  let server: TestServer;
  const modelDir = () => join(repo.root, MODEL);
  const rollout = (action: RolloutCommandOptions['action'], extra: Partial<RolloutCommandOptions> = {}) => rolloutCommand({ action, modelRepository: repo.root, model: MODEL, ...extra });

  beforeAll(async () => {
    repo = tempRepo({ maxBatchSize: 8, maxQueueDelayUs: 500, seed: 1 });
    // A long poll interval: each step below polls explicitly, so what is served after it is known.
    server = await startTestServer(repo.root, { pollIntervalMs: 60_000 });
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  /** Concurrent clients sending requests without a version until stopped; every answer recorded. */
  function load(clients = 6) {
    const answers: { status: number; version?: string; error?: string }[] = [];
    let running = true;
    const loops = Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; running; i++) {
        const r = await infer(server.url, inferBody(txRequest(c * 1000 + i, i % 5)));
        answers.push({ status: r.status, version: r.body.model_version, error: r.body.error });
      }
    });
    return {
      answers,
      /** Waits until `n` more answers have come in. */
      async more(n: number) {
        const until = answers.length + n;
        while (answers.length < until) await new Promise((r) => setTimeout(r, 5));
      },
      async stop() {
        running = false;
        await Promise.all(loops);
        return answers;
      },
    };
  }

  const versionsSince = (answers: { version?: string }[], from: number) => {
    const counts: Record<string, number> = {};
    for (const a of answers.slice(from)) counts[a.version ?? '?'] = (counts[a.version ?? '?'] ?? 0) + 1;
    return counts;
  };

  it('pin → export v2 (waits) → canary 50% → promote → canary v3 → rollback: no failed request', async () => {
    await rollout('pin');
    writeVersionFolder(modelDir(), 2, buildSyntheticModel({ seed: 2 }));
    await server.manager.poll();
    const l = load();
    await l.more(40);
    // Pinned: the new export does not serve.
    expect(versionsSince(l.answers, 0)).toEqual({ '1': l.answers.length });

    const started = await rollout('start', { canary: '2', weight: '50%' });
    expect(started.result.rollout).toMatchObject({ stable: 1, canary: 2, canary_weight: 0.5 });
    await server.manager.poll();
    let mark = l.answers.length;
    await l.more(200);
    const split = versionsSince(l.answers, mark + 20); // a few answers were in flight across the swap
    expect(split['1']! + split['2']!).toBe(l.answers.length - mark - 20);
    expect(split['2']! / (split['1']! + split['2']!)).toBeGreaterThan(0.4);
    expect(split['2']! / (split['1']! + split['2']!)).toBeLessThan(0.6);
    const metrics = (await get(server.url, '/metrics')).text;
    expect(metrics).toMatch(new RegExp(`^gnnctl_model_traffic_weight\\{model="${MODEL}",version="2"\\} 0.5$`, 'm'));
    expect(metrics).toMatch(new RegExp(`^nv_inference_request_success\\{model="${MODEL}",version="2"\\} [1-9]`, 'm'));
    expect(metrics).toMatch(new RegExp(`^nv_inference_request_success\\{model="${MODEL}",version="1"\\} [1-9]`, 'm'));

    await rollout('promote');
    await server.manager.poll();
    mark = l.answers.length;
    await l.more(60);
    expect(Object.keys(versionsSince(l.answers, mark + 20))).toEqual(['2']);
    expect((await get(server.url, `/v2/models/${MODEL}`)).json()).toMatchObject({ versions: ['2'] });

    writeVersionFolder(modelDir(), 3, buildSyntheticModel({ seed: 3 }));
    await rollout('start', { canary: '3', weight: '0.5' });
    await server.manager.poll();
    mark = l.answers.length;
    await l.more(60);
    expect(Object.keys(versionsSince(l.answers, mark + 20)).sort()).toEqual(['2', '3']);

    const back = await rollout('rollback');
    expect(back.result.rollout).toMatchObject({ stable: 2 });
    await server.manager.poll();
    mark = l.answers.length;
    await l.more(60);
    expect(Object.keys(versionsSince(l.answers, mark + 20))).toEqual(['2']);

    const answers = await l.stop();
    const failed = answers.filter((a) => a.status !== 200);
    expect(failed).toEqual([]);
    expect(answers.length).toBeGreaterThan(400);
  });

  it('gnnctl rollout (the binary): status --json, and a bad --weight exits 2', () => {
    const status = spawnSync(process.execPath, [BIN, 'rollout', 'status', '--model-repository', repo.root, '--model', MODEL, '--json'], { encoding: 'utf8' });
    expect(status.status).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ model: MODEL, action: 'status', rollout: { stable: 2 }, available_versions: [1, 2, 3] });
    const pin = spawnSync(process.execPath, [BIN, 'rollout', 'pin', '--model-repository', repo.root, '--model', MODEL, '--stable', '3', '--json'], { encoding: 'utf8' });
    expect(pin.status).toBe(0);
    expect(JSON.parse(readFileSync(join(repo.root, MODEL, 'rollout.json'), 'utf8'))).toMatchObject({ stable: 3 });
    const bad = spawnSync(process.execPath, [BIN, 'rollout', 'start', '--model-repository', repo.root, '--model', MODEL, '--canary', '2', '--weight', '2'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--weight must be a share of requests between 0 and 1/);
    const noModel = spawnSync(process.execPath, [BIN, 'rollout', 'status', '--model-repository', repo.root, '--model', 'nope'], { encoding: 'utf8' });
    expect(noModel.status).toBe(2);
    expect(noModel.stderr).toMatch(/no model "nope"/);
  });
});
