/** `gnnctl datasets synth-mesh`: validate the flags, run the mesh generator, summarise what was written. */
import { UsageError } from '../../core/errors.js';
import { generateMesh, INCIDENT_KINDS, type MeshResult } from '../../datasets/mesh/generate.js';
import { intFlag } from '../flags.js';
import type { CommandOutput } from '../run.js';

export interface SynthMeshCommandOptions {
  out?: unknown;
  services?: unknown;
  hours?: unknown;
  step?: unknown;
  seed?: unknown;
  json?: boolean;
  quiet?: boolean;
}

export async function synthMeshCommand(opts: SynthMeshCommandOptions): Promise<CommandOutput<MeshResult>> {
  if (typeof opts.out !== 'string' || opts.out.trim() === '') {
    throw new UsageError('an output folder is required', { where: '--out', value: opts.out, hint: 'e.g. --out datasets/mesh' });
  }
  const services = intFlag('--services', 10, 20000)(opts.services ?? '200');
  const hours = intFlag('--hours', 2, 24 * 90)(opts.hours ?? '72');
  const step = intFlag('--step', 10, 86400)(opts.step ?? '300');
  const seed = intFlag('--seed', 0, 0xffffffff)(opts.seed ?? '0');
  if ((hours * 3600) / step < 24) {
    throw new UsageError('fewer than 24 snapshots: too short to fit and score', { where: '--hours', value: opts.hours, hint: `at --step ${step}, use --hours ${Math.ceil((24 * step) / 3600)} or more` });
  }
  const r = generateMesh({ out: opts.out, services, hours, step, seed });
  const kinds = INCIDENT_KINDS.map((k) => `${r.incidents[k]} ${k}`).join(', ');
  const text = [
    `wrote a ${r.services}-service mesh (seed ${r.seed}): ${r.snapshots} snapshots of ${r.step_seconds} s, ${r.first_ts} .. ${r.last_ts}, in ${r.seconds} s`,
    `  metrics ${r.rows.metrics.toLocaleString('en-US')} rows, calls ${r.rows.calls.toLocaleString('en-US')} rows, events ${r.rows.events.toLocaleString('en-US')} rows`,
    `  incidents after ${r.normal_until}: ${kinds}; ${r.planned_scale_outs} planned scale-outs`,
    `  config: ${r.files.config}`,
  ].join('\n');
  return { result: r, text };
}
