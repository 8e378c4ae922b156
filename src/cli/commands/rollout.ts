/**
 * `gnnctl rollout pin|start|set|promote|rollback|status|end`: canary rollouts of a served model, written
 * into the model repository as `<model>/rollout.json` (atomically) and picked up by a running
 * `gnnctl serve` at its next repository poll. The file's meaning and the checks: `serve/rollout.ts`.
 */
import { UsageError } from '../../core/errors.js';
import { nextRollout, readRolloutState, writeRollout, type Rollout, type RolloutAction } from '../../serve/rollout.js';
import type { CommandOutput } from '../run.js';

export type RolloutSubcommand = 'pin' | 'start' | 'set' | 'promote' | 'rollback' | 'status' | 'end';

/** As commander passes them; checked here. */
export interface RolloutCommandOptions {
  action: RolloutSubcommand;
  /** `--model-repository DIR` (required). */
  modelRepository?: unknown;
  /** `--model NAME` (required). */
  model?: unknown;
  /** `start --canary V`: the version to send a share of the traffic to. */
  canary?: unknown;
  /**
   * `start --stable V`: the version that keeps the rest (default: the one serving now); `pin --stable V`:
   * the version to serve alone (default: the newest complete one).
   */
  stable?: unknown;
  /** `start|set --weight W`: the canary's share of requests, 0..1 (start's default 0.1). */
  weight?: unknown;
  json?: boolean;
  quiet?: boolean;
}

export interface RolloutResult {
  model: string;
  file: string;
  action: RolloutSubcommand;
  /** The rollout now in the file; null when there is none (the version policy decides). */
  rollout: Rollout | null;
  /** The rollout before the command. */
  previous: Rollout | null;
  available_versions: number[];
}

export async function rolloutCommand(opts: RolloutCommandOptions): Promise<CommandOutput<RolloutResult>> {
  if (typeof opts.modelRepository !== 'string' || opts.modelRepository === '') throw new UsageError('--model-repository is required', { hint: 'the folder `gnnctl serve` serves' });
  if (typeof opts.model !== 'string' || opts.model === '') throw new UsageError('--model is required', { hint: 'the model folder name in the repository' });
  const state = await readRolloutState({ modelRepository: opts.modelRepository, model: opts.model });
  let action: RolloutAction | undefined;
  switch (opts.action) {
    case 'start':
      action = { kind: 'start', canary: version(opts.canary, '--canary', true)!, weight: weight(opts.weight, 0.1), stable: version(opts.stable, '--stable', false) };
      break;
    case 'set':
      if (opts.weight === undefined) throw new UsageError('rollout set needs --weight', { hint: 'e.g. --weight 0.5 for half of the requests' });
      action = { kind: 'set', weight: weight(opts.weight, 0) };
      break;
    case 'pin':
      action = { kind: 'pin', version: version(opts.stable, '--stable', false) };
      break;
    case 'promote':
    case 'rollback':
    case 'end':
      action = { kind: opts.action };
      break;
    case 'status':
      break;
  }
  const next = action ? nextRollout(state, action) : state.rollout;
  // The version that is about to get traffic must load as the server would load it: a damaged canary
  // would be refused by the server and silently get none.
  const gaining = opts.action === 'start' ? next?.canary : opts.action === 'promote' || opts.action === 'pin' ? next?.stable : undefined;
  if (gaining !== undefined) {
    const { checkVersionLoads } = await import('../../serve/version_check.js');
    await checkVersionLoads(opts.modelRepository, opts.model, gaining);
  }
  if (action) writeRollout(state, next);
  const result: RolloutResult = {
    model: state.model,
    file: state.file,
    action: opts.action,
    rollout: next ?? null,
    previous: state.rollout ?? null,
    available_versions: state.available,
  };
  return { result, text: describe(result) };
}

function describe(r: RolloutResult): string {
  const now = r.rollout;
  const what = !now
    ? `no rollout: the version policy chooses (complete versions: ${r.available_versions.join(', ') || 'none'})`
    : now.canary === undefined
      ? `version ${now.stable} serves all requests (pinned)`
      : `version ${now.stable} stable, version ${now.canary} canary at ${+((now.canary_weight ?? 0) * 100).toFixed(2)}% of requests`;
  const done = r.action === 'status' ? '' : ' (a running gnnctl serve picks it up at its next repository poll)';
  return `model "${r.model}": ${what}${done}`;
}

function version(v: unknown, flag: string, required: boolean): number | undefined {
  if (v === undefined) {
    if (required) throw new UsageError(`${flag} is required`, { hint: 'the version folder number, e.g. --canary 4' });
    return undefined;
  }
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`${flag} must be a version number (a positive integer)`, { value: v });
  return n;
}

function weight(v: unknown, dflt: number): number {
  if (v === undefined) return dflt;
  const text = String(v).trim();
  const n = text.endsWith('%') ? Number(text.slice(0, -1)) / 100 : Number(text);
  if (text === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new UsageError('--weight must be a share of requests between 0 and 1, or a percentage (0.05 or 5%)', { value: v });
  return n;
}
