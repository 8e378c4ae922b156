/**
 * The deploy files (deploy/): well-formed, and consistent with the server they deploy — every flag they
 * pass is a flag of `gnnctl serve`, probes hit its health routes on the port it listens on, the grace
 * period covers the drain, and every metric the dashboard and the alerts query is one the server exports.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { get, startTestServer, tempRepo, type TempRepo, type TestServer } from './helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;
const yamlDocs = (path: string): Doc[] =>
  parseAllDocuments(read(path)).map((d) => {
    expect(d.errors).toEqual([]);
    return d.toJS();
  });

/** The long flags `gnnctl serve` takes. */
const serveFlags = new Set(
  buildProgram()
    .commands.find((c) => c.name() === 'serve')!
    .options.map((o) => o.long!),
);

/** Checks `args` (`serve`, then `--flag[=value]` or `--flag value`) against the serve command; returns flag → value. */
function serveArgs(args: string[]): Map<string, string | true> {
  expect(args[0]).toBe('serve');
  const out = new Map<string, string | true>();
  for (let i = 1; i < args.length; i++) {
    const a = args[i]!;
    expect(a.startsWith('--'), `argument ${a}`).toBe(true);
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    expect(serveFlags.has(flag), `gnnctl serve has no ${flag}`).toBe(true);
    if (inline !== undefined) out.set(flag, inline);
    else if (args[i + 1] !== undefined && !args[i + 1]!.startsWith('--')) out.set(flag, args[++i]!);
    else out.set(flag, true);
  }
  return out;
}

describe('deploy/Dockerfile', () => {
  const text = read('deploy/Dockerfile');
  const lines = text.split('\n').filter((l) => !l.startsWith('#'));
  const stages = text.split(/^FROM /m).slice(1);

  it('is multi-stage, and the runtime stage runs as a non-root user', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const last = stages[stages.length - 1]!;
    const user = /^USER (\S+)/m.exec(last)?.[1];
    expect(user).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user);
    expect(last).toMatch(/COPY --from=build/);
  });

  it('has gnnctl as its entry point and `gnnctl serve` with valid flags as its command', () => {
    const entry = JSON.parse(/^ENTRYPOINT (.+)$/m.exec(text)![1]!) as string[];
    expect(entry).toEqual(['node', '/app/bin/gnnctl.js']);
    const cmd = JSON.parse(/^CMD (.+)$/m.exec(text)![1]!) as string[];
    const flags = serveArgs(cmd);
    expect(flags.get('--host')).toBe('0.0.0.0');
    expect(text).toMatch(new RegExp(`^EXPOSE ${flags.get('--port')}$`, 'm'));
  });

  it('copies only files that exist', () => {
    for (const l of lines) {
      const m = /^COPY (?!--from)(.+) \S+$/.exec(l);
      if (!m) continue;
      for (const src of m[1]!.split(/\s+/)) expect(existsSync(`${ROOT}${src}`), `COPY ${src}`).toBe(true);
    }
  });
});

describe('deploy/kubernetes/gnnctl_serve.yaml', () => {
  const docs = yamlDocs('deploy/kubernetes/gnnctl_serve.yaml');
  const deployment = docs.find((d) => d.kind === 'Deployment');
  const service = docs.find((d) => d.kind === 'Service');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const flags = serveArgs(container.args);

  it('is a Deployment and a Service that select the same pods', () => {
    expect(deployment.apiVersion).toBe('apps/v1');
    expect(deployment.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });

  it('probes the health routes on the port the server listens on, left open by --auth-open-health', () => {
    const port = container.ports.find((p: Doc) => p.name === 'http');
    expect(String(port.containerPort)).toBe(flags.get('--port'));
    expect(container.livenessProbe.httpGet).toEqual({ path: '/v2/health/live', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/v2/health/ready', port: 'http' });
    if (flags.has('--auth-token-file')) expect(flags.get('--auth-open-health')).toBe(true);
    expect(service.spec.ports[0].targetPort).toBe('http');
    expect(deployment.spec.template.metadata.annotations['prometheus.io/port']).toBe(flags.get('--port'));
  });

  it('gives the pod time to drain: grace period ≥ preStop sleep + --shutdown-timeout', () => {
    const preStop = container.lifecycle.preStop.exec.command as string[];
    expect(preStop[0]).toBe('sleep');
    const drain = Number(preStop[1]) + Number(flags.get('--shutdown-timeout'));
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(drain);
  });

  it('runs as non-root with a read-only root file system', () => {
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).not.toBe(0);
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    const tokenDir = container.volumeMounts.find((m: Doc) => String(flags.get('--auth-token-file')).startsWith(m.mountPath));
    expect(tokenDir?.readOnly).toBe(true);
  });
});

describe('deploy/kserve', () => {
  const [runtime, isvc] = yamlDocs('deploy/kserve/gnnctl_serving_runtime.yaml');
  const [triton] = yamlDocs('deploy/kserve/triton_inference_service.yaml');

  it('a ServingRuntime running gnnctl serve on /mnt/models, and an InferenceService using it', () => {
    expect([runtime.apiVersion, runtime.kind]).toEqual(['serving.kserve.io/v1alpha1', 'ServingRuntime']);
    expect(runtime.spec.protocolVersions).toEqual(['v2']);
    const c = runtime.spec.containers[0];
    const flags = serveArgs(c.args);
    expect(flags.get('--model-repository')).toBe('/mnt/models');
    expect(String(c.ports[0].containerPort)).toBe(flags.get('--port'));
    expect(c.readinessProbe.httpGet.path).toBe('/v2/health/ready');
    expect([isvc.apiVersion, isvc.kind]).toEqual(['serving.kserve.io/v1beta1', 'InferenceService']);
    const model = isvc.spec.predictor.model;
    expect(model.runtime).toBe(runtime.metadata.name);
    expect(runtime.spec.supportedModelFormats.map((f: Doc) => f.name)).toContain(model.modelFormat.name);
    expect(model.protocolVersion).toBe('v2');
  });

  it("an InferenceService on Triton's own runtime for the same repository", () => {
    expect(triton.kind).toBe('InferenceService');
    expect(triton.spec.predictor.model).toMatchObject({ modelFormat: { name: 'triton' }, runtime: 'kserve-tritonserver', protocolVersion: 'v2' });
    expect(triton.spec.predictor.model.storageUri).toBe(isvc.spec.predictor.model.storageUri);
  });
});

describe('dashboard and alerts query metrics the server exports', () => {
  let repo: TempRepo;
  let server: TestServer;
  let families: Set<string>;
  beforeAll(async () => {
    repo = tempRepo({ maxBatchSize: 4 });
    server = await startTestServer(repo.root);
    families = new Set([...(await get(server.url, '/metrics')).text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  /** The gnnctl, Triton and process metric names a PromQL expression uses. */
  const metricsIn = (expr: string) => [...expr.matchAll(/\b((?:nv|gnnctl|process)_[a-z0-9_]+)/g)].map((m) => m[1]!);
  /** A family, or a histogram's `_bucket`/`_sum`/`_count` series (nv_inference_count is a family of its own). */
  const exported = (n: string) => families.has(n) || families.has(n.replace(/_(bucket|sum|count)$/, ''));
  const checkExpr = (expr: string, where: string) => {
    const names = metricsIn(expr);
    expect(names.length, `${where} queries no gnnctl metric: ${expr}`).toBeGreaterThan(0);
    for (const n of names) expect(exported(n), `${where}: ${n} is not exported by gnnctl serve`).toBe(true);
  };

  it('deploy/grafana/gnnctl_serve_dashboard.json', () => {
    const dash = JSON.parse(read('deploy/grafana/gnnctl_serve_dashboard.json')) as { uid: string; panels: { id: number; title: string; targets: { expr: string }[]; gridPos: object }[]; templating: { list: { name: string; query: string }[] } };
    expect(dash.uid).toBe('gnnctl-serve');
    expect(new Set(dash.panels.map((p) => p.id)).size).toBe(dash.panels.length);
    for (const p of dash.panels) {
      expect(p.gridPos).toBeDefined();
      expect(p.targets.length).toBeGreaterThan(0);
      for (const t of p.targets) checkExpr(t.expr, `panel "${p.title}"`);
    }
    checkExpr(dash.templating.list.find((v) => v.name === 'model')!.query, 'variable model');
  });

  it('deploy/prometheus/gnnctl_serve_alerts.yaml', () => {
    const rules = parse(read('deploy/prometheus/gnnctl_serve_alerts.yaml')) as { groups: { name: string; rules: { alert: string; expr: string; labels: { severity: string }; annotations: { summary: string } }[] }[] };
    const all = rules.groups.flatMap((g) => g.rules);
    expect(all.length).toBeGreaterThan(5);
    for (const r of all) {
      expect(r.alert).toMatch(/^GnnctlServe[A-Za-z]+$/);
      expect(['critical', 'warning']).toContain(r.labels.severity);
      expect(r.annotations.summary.length).toBeGreaterThan(0);
      if (r.alert !== 'GnnctlServeDown') checkExpr(r.expr, `alert ${r.alert}`);
    }
  });
});
