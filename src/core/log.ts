/**
 * Logging goes to stderr so that `--json` output on stdout stays one clean object. `setQuiet(true)`
 * silences info lines (warnings still print: a CI log should show dropped edges and the like).
 */
let quiet = false;
let progressQuiet = false;
const warnings: string[] = [];

/**
 * @param progress silences the non-TTY progress heartbeat too (default: same as `q`). `--json` keeps it:
 * a CI job that prints JSON on stdout still shows on stderr, every 30 s, that it is alive and its ETA.
 */
export function setQuiet(q: boolean, progress = q): void {
  quiet = q;
  progressQuiet = progress;
}

export function isProgressQuiet(): boolean {
  return progressQuiet;
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
