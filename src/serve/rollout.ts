/**
 * Canary rollouts through the model repository: `<repository>/<model>/rollout.json`, written by
 * `gnnctl rollout` and read by a running `gnnctl serve` at its next repository poll, like a new version.
 *
 * ```json
 * {"stable": 3, "canary": 4, "canary_weight": 0.1, "updated_at": "2026-11-25T08:00:00.000Z"}
 * ```
 *
 * While the file exists the model serves exactly `stable` and (when given) `canary`, whatever its
 * version policy would choose, so a new export waits for `rollout start` instead of taking all traffic at
 * once. A request without a version goes to the canary with probability `canary_weight` (spread evenly:
 * every 1/w-th request, not a coin flip, so the share is exact at any traffic level); a request naming a
 * version gets that version. The workflow Kumo describes — deploy as canary, ramp, promote, roll back —
 * is:
 *
 * | command                         | file after it                              |
 * |---------------------------------|--------------------------------------------|
 * | `rollout pin` (before exporting) | `{stable: <newest now>}`: a new export waits |
 * | `rollout start --canary 4`      | `{stable: <serving now>, canary: 4, canary_weight: 0.1}` |
 * | `rollout set --weight 0.5`      | `canary_weight: 0.5`                       |
 * | `rollout promote`               | `{stable: 4}` (4 only)                     |
 * | `rollout rollback`              | `{stable: 3}` (3 only)                     |
 * | `rollout end`                   | no file: the version policy decides again  |
 *
 * A swap is one assignment of the model's version table (see `model_manager.ts`): requests in flight on a
 * version leaving the table finish on it, and requests that resolved to it a moment before the swap
 * resolve again, so promotion and rollback drop no request.
 */
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ArtifactError, UsageError } from '../core/errors.js';
import { writeJsonAtomic } from '../core/atomic.js';
import { ROLLOUT_FILE, scanVersionFolders } from './repository.js';

export { ROLLOUT_FILE };

const version = z.number().int().min(1);
export const RolloutSchema = z
  .object({
    stable: version,
    canary: version.optional(),
    canary_weight: z.number().min(0).max(1).optional(),
    updated_at: z.string().optional(),
  })
  .strict()
  .refine((r) => (r.canary === undefined) === (r.canary_weight === undefined), { message: 'canary and canary_weight go together' })
  .refine((r) => r.canary === undefined || r.canary !== r.stable, { message: 'canary must differ from stable' });

export type Rollout = z.infer<typeof RolloutSchema>;

/** Parses the text of a rollout file; throws ArtifactError naming the file and every problem. */
export function parseRollout(text: string, file: string): Rollout {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ArtifactError(`${ROLLOUT_FILE} is not JSON: ${(e as Error).message}`, { where: file });
  }
  const r = RolloutSchema.safeParse(raw);
  if (!r.success) {
    throw new ArtifactError(`${ROLLOUT_FILE} is not a rollout: ${r.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; ')}`, {
      where: file,
      hint: 'write it with `gnnctl rollout`: {"stable": N, "canary": M, "canary_weight": 0..1}',
    });
  }
  return r.data;
}

/**
 * Picks stable or canary for requests without a version: the canary gets exactly `weight` of them, spread
 * evenly (an error-diffusion counter).
 */
export class TrafficSplit {
  private acc = 0;

  constructor(readonly weight: number) {}

  /** True when this request goes to the canary. */
  next(): boolean {
    if (this.weight <= 0) return false;
    this.acc += this.weight;
    if (this.acc >= 1 - 1e-9) {
      this.acc -= 1;
      return true;
    }
    return false;
  }
}

// ---- The `gnnctl rollout` side: reading and writing the file with checks. ----

export interface RolloutTarget {
  modelRepository: string;
  model: string;
}

export interface RolloutState {
  model: string;
  file: string;
  /** The file's contents, or undefined when there is none (the version policy decides). */
  rollout?: Rollout;
  /** Complete version folders in the repository (ascending). */
  available: number[];
}

export async function readRolloutState(t: RolloutTarget): Promise<RolloutState> {
  const dir = join(t.modelRepository, t.model);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory() || !statSync(join(dir, 'config.pbtxt'), { throwIfNoEntry: false })?.isFile()) {
    throw new UsageError(`no model "${t.model}" in ${t.modelRepository} (no ${t.model}/config.pbtxt)`, { where: '--model', hint: 'pass the model folder name under --model-repository' });
  }
  const file = join(dir, ROLLOUT_FILE);
  let rollout: Rollout | undefined;
  let text: string | undefined;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new ArtifactError(`cannot read ${file}: ${(e as Error).message}`, { where: file });
  }
  if (text !== undefined) rollout = parseRollout(text, file);
  // Any model file name will do for "complete": config.pbtxt may name another, so read it from there.
  const filename = /default_model_filename\s*:\s*"([^"]+)"/.exec(readFileSync(join(dir, 'config.pbtxt'), 'utf8'))?.[1] ?? 'model.onnx';
  const available = (await scanVersionFolders(dir, filename)).map((v) => v.version);
  return { model: t.model, file, rollout, available };
}

export type RolloutAction =
  | { kind: 'start'; canary: number; weight: number; stable?: number }
  | { kind: 'set'; weight: number }
  | { kind: 'pin'; version?: number }
  | { kind: 'promote' }
  | { kind: 'rollback' }
  | { kind: 'end' };

/**
 * The rollout after `action`, checked against the repository (versions must be complete folders) and
 * the current file. Throws UsageError with what to do instead.
 */
export function nextRollout(state: RolloutState, action: RolloutAction, now = new Date()): Rollout | undefined {
  const cur = state.rollout;
  const need = (v: number, flag: string) => {
    if (!state.available.includes(v)) {
      throw new UsageError(`model "${state.model}" has no complete version ${v} (complete versions: ${state.available.join(', ') || 'none'})`, { where: flag, hint: 'export the version first: a version folder with its model file' });
    }
  };
  const stamp = now.toISOString();
  switch (action.kind) {
    case 'start': {
      checkWeight(action.weight);
      if (cur?.canary !== undefined) {
        throw new UsageError(`model "${state.model}" already has a canary (version ${cur.canary} at weight ${cur.canary_weight})`, { hint: 'promote or roll it back first' });
      }
      // The stable version: the one pinned now, else the one the version policy serves (the latest).
      const stable = action.stable ?? cur?.stable ?? state.available.filter((v) => v !== action.canary).pop();
      if (stable === undefined) throw new UsageError(`model "${state.model}" has no version besides ${action.canary} to keep as stable`, { where: '--stable' });
      need(stable, '--stable');
      need(action.canary, '--canary');
      if (stable === action.canary) throw new UsageError(`the canary and the stable version are both ${stable}`, { where: '--canary' });
      return { stable, canary: action.canary, canary_weight: action.weight, updated_at: stamp };
    }
    case 'set':
      checkWeight(action.weight);
      if (cur?.canary === undefined) throw new UsageError(`model "${state.model}" has no canary to set the weight of`, { hint: 'start one: gnnctl rollout start --canary <version>' });
      return { ...cur, canary_weight: action.weight, updated_at: stamp };
    case 'promote':
      if (cur?.canary === undefined) throw new UsageError(`model "${state.model}" has no canary to promote`, { hint: 'start one: gnnctl rollout start --canary <version>' });
      need(cur.canary, 'rollout.json canary');
      return { stable: cur.canary, updated_at: stamp };
    case 'rollback':
      if (cur?.canary === undefined) throw new UsageError(`model "${state.model}" has no canary to roll back`, { hint: 'see `gnnctl rollout status`' });
      return { stable: cur.stable, updated_at: stamp };
    case 'pin': {
      if (cur?.canary !== undefined) throw new UsageError(`model "${state.model}" has a canary (version ${cur.canary})`, { hint: 'promote or roll it back first' });
      const v = action.version ?? state.available[state.available.length - 1];
      if (v === undefined) throw new UsageError(`model "${state.model}" has no complete version to pin`);
      need(v, '--stable');
      return { stable: v, updated_at: stamp };
    }
    case 'end':
      return undefined;
  }
}

function checkWeight(w: number): void {
  if (!(Number.isFinite(w) && w >= 0 && w <= 1)) throw new UsageError('--weight must be a share of traffic between 0 and 1 (e.g. 0.05 for 5%)', { value: w });
}

/** Writes (atomically) or removes the rollout file. */
export function writeRollout(state: RolloutState, rollout: Rollout | undefined): void {
  if (rollout === undefined) rmSync(state.file, { force: true });
  else writeJsonAtomic(state.file, rollout);
}
