/**
 * Logging goes to stderr so that `--json` output on stdout stays one clean object. `setQuiet(true)`
 * silences info lines (warnings still print: a CI log should show dropped edges and the like).
 */
let quiet = false;
const warnings: string[] = [];

export function setQuiet(q: boolean): void {
  quiet = q;
}

export function isQuiet(): boolean {
  return quiet;
}

export function info(msg: string): void {
  if (!quiet) process.stderr.write(`${msg}\n`);
}

export function warn(msg: string): void {
  warnings.push(msg);
  process.stderr.write(`warning: ${msg}\n`);
}

/** Warnings emitted so far in this process (commands attach them to their JSON result). */
export function takeWarnings(): string[] {
  return warnings.splice(0, warnings.length);
}
