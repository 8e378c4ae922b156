/**
 * The standard `process_*` metrics every Prometheus client library exports (the names and units of
 * the Go and Python clients and Node's prom-client), so stock dashboards and alerts on CPU, memory and
 * file descriptors work on gnnctl serve:
 *
 * | metric                              | type    | source                                   |
 * |-------------------------------------|---------|------------------------------------------|
 * | `process_cpu_user_seconds_total`    | counter | `process.cpuUsage()` (every thread)      |
 * | `process_cpu_system_seconds_total`  | counter | `process.cpuUsage()`                     |
 * | `process_cpu_seconds_total`         | counter | user + system                            |
 * | `process_resident_memory_bytes`     | gauge   | `process.memoryUsage.rss()`              |
 * | `process_virtual_memory_bytes`      | gauge   | `/proc/self/stat` (Linux only)           |
 * | `process_start_time_seconds`        | gauge   | now − `process.uptime()`, Unix seconds   |
 * | `process_open_fds`                  | gauge   | entries of `/proc/self/fd` (Linux only)  |
 * | `process_max_fds`                   | gauge   | `/proc/self/limits` (Linux only)         |
 *
 * Where `/proc` is missing (macOS, Windows) the Linux-only metrics are left out rather than reported
 * as zero, which an alert would read as a fact.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Registry, Sample } from './metrics.js';

export function registerProcessMetrics(r: Registry): void {
  const startTime = Date.now() / 1000 - process.uptime();
  const one = (value: number | undefined): Sample[] => (value === undefined ? [] : [{ labels: {}, value }]);
  r.collected('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', 'counter', () => one(process.cpuUsage().user / 1e6));
  r.collected('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.', 'counter', () => one(process.cpuUsage().system / 1e6));
  r.collected('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', 'counter', () => {
    const u = process.cpuUsage();
    return one((u.user + u.system) / 1e6);
  });
  r.collected('process_resident_memory_bytes', 'Resident memory size in bytes.', 'gauge', () => one(process.memoryUsage.rss()));
  r.collected('process_virtual_memory_bytes', 'Virtual memory size in bytes.', 'gauge', () => one(virtualMemoryBytes()));
  r.collected('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', 'gauge', () => one(startTime));
  r.collected('process_open_fds', 'Number of open file descriptors.', 'gauge', () => one(openFds()));
  r.collected('process_max_fds', 'Maximum number of open file descriptors.', 'gauge', () => one(maxFds()));
}

function virtualMemoryBytes(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name, which is in parentheses and may contain spaces; vsize is field 23.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const v = Number(fields[20]);
    return Number.isFinite(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

function openFds(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return undefined;
  }
}

function maxFds(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m && m[1] !== 'unlimited' ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
