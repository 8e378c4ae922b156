/**
 * The one place that turns a command's result or error into output and an exit code. Commands are plain
 * async functions that take options and return a `CommandOutput`; tests call them directly.
 */
import { ExitCode, GnnctlError, QualityGateError } from '../core/errors.js';
import { setQuiet, takeWarnings } from '../core/log.js';

export interface CommandOutput<T = unknown> {
  /** What `--json` prints: one object. */
  result: T;
  /** What a person reads on stdout without `--json`. */
  text: string;
}

export interface GlobalOptions {
  json?: boolean;
  quiet?: boolean;
}

export async function runCommand(opts: GlobalOptions, impl: () => Promise<CommandOutput>): Promise<number> {
  setQuiet(Boolean(opts.json || opts.quiet), Boolean(opts.quiet));
  try {
    const out = await impl();
    const warnings = takeWarnings();
    if (opts.json) {
      const result = out.result !== null && typeof out.result === 'object' && warnings.length > 0 ? { ...out.result, warnings } : out.result;
      process.stdout.write(`${JSON.stringify(result)}\n`);
    } else if (out.text) {
      process.stdout.write(out.text.endsWith('\n') ? out.text : `${out.text}\n`);
    }
    return ExitCode.ok;
  } catch (e) {
    return reportError(e, opts);
  }
}

export function reportError(e: unknown, opts: GlobalOptions = {}): number {
  if (e instanceof GnnctlError) {
    process.stderr.write(`error: ${e.describe()}\n`);
    if (opts.json) {
      const body: Record<string, unknown> = { ...e.toJSON(), exit_code: e.exitCode };
      if (e instanceof QualityGateError && e.result !== undefined) body.result = e.result;
      process.stdout.write(`${JSON.stringify(body)}\n`);
    }
    return e.exitCode;
  }
  const err = e instanceof Error ? e : new Error(String(e));
  process.stderr.write(`internal error (a bug in gnnctl; please report it with this trace):\n${err.stack ?? err.message}\n`);
  if (opts.json) process.stdout.write(`${JSON.stringify({ error: 'InternalError', message: err.message, exit_code: ExitCode.internal })}\n`);
  return ExitCode.internal;
}
