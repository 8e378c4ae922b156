import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { formatRunsTable, type RunRow } from '../../src/cli/commands/runs.js';
import { buildProgram } from '../../src/cli/main.js';

// The README and docs/ quote what the tool prints and which commands and flags exist; these checks fail
// when the code moves and the text does not. The train and predict outputs need trained models and are
// checked against the real binary in readme_examples.e2e.test.ts; the pipeline table is copied from a real
// run and not re-run (one tiny pipeline takes minutes).

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function markdownFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join(ROOT, 'docs', f));
  return [join(ROOT, 'README.md'), join(ROOT, 'CHANGELOG.md'), ...docs].filter((f) => existsSync(f));
}

/** Markdown text without fenced code blocks, whose brackets are not links. */
function prose(md: string): string {
  return md.replace(/^```[\s\S]*?^```/gm, '');
}

/** GitHub's heading anchor: lower case, punctuation dropped (hyphens and underscores kept), spaces → hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const out = new Set<string>();
  for (const m of prose(readFileSync(file, 'utf8')).matchAll(/^#{1,6}\s+(.+)$/gm)) out.add(slug(m[1] ?? ''));
  return out;
}

function commandByPath(program: Command, path: readonly string[]): Command | undefined {
  let cmd: Command | undefined = program;
  for (const name of path) cmd = cmd?.commands.find((c) => c.name() === name);
  return cmd;
}

/** The README's command table: `gnnctl <command> [a\|b\|…]` per row. */
function readmeCommandRows(): { command: string; subcommands: string[] }[] {
  const section = README.slice(README.indexOf('## Commands'));
  return [...section.matchAll(/^\| `gnnctl ([a-z-]+)(?: ([a-z-]+(?:\\\|[a-z-]+)*))?` \|/gm)].map((m) => ({
    command: m[1] ?? '',
    subcommands: m[2] ? m[2].split('\\|') : [],
  }));
}

describe('README and docs', () => {
  it('every relative link resolves to a file, and every #anchor to a heading in it', () => {
    const broken: string[] = [];
    for (const file of markdownFiles()) {
      for (const m of prose(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] ?? '';
        if (/^[a-z]+:/i.test(target)) continue; // http:, https:, mailto:
        const [path = '', anchor] = target.split('#');
        const resolved = path ? resolve(dirname(file), path) : file;
        if (!existsSync(resolved)) {
          broken.push(`${file.slice(ROOT.length + 1)}: ${target} (no such file)`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && statSync(resolved).isFile() && !anchors(resolved).has(anchor)) {
          broken.push(`${file.slice(ROOT.length + 1)}: ${target} (no heading with that anchor)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('stays a README a newcomer reads: at most 250 lines', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(250);
  });

  it("the README's command table lists exactly the commands `gnnctl --help` lists", () => {
    const program = buildProgram();
    const rows = readmeCommandRows();
    const listed = [...new Set(rows.map((r) => r.command))].sort();
    const actual = program.commands.map((c) => c.name()).filter((n) => n !== 'help').sort();
    expect(listed).toEqual(actual);
    for (const row of rows.filter((r) => r.subcommands.length > 0)) {
      const parent = commandByPath(program, [row.command]);
      const subs = (parent?.commands ?? []).map((c) => c.name()).filter((n) => n !== 'help');
      if (row.command === 'bench') expect(subs).toContain(row.subcommands[0]);
      else expect([...row.subcommands].sort(), `gnnctl ${row.command}`).toEqual([...subs].sort());
    }
  });

  it('every `$ npx gnnctl …` example in the README names a real command and only its own flags', () => {
    const program = buildProgram();
    const problems: string[] = [];
    const lines = [...README.matchAll(/^\$ npx gnnctl (.+?)(?: &)?$/gm)].map((m) => m[1] ?? '');
    expect(lines.length).toBeGreaterThanOrEqual(8);
    for (const line of lines) {
      const words = line.split(/\s+/);
      let cmd: Command = program;
      let i = 0;
      for (; i < words.length; i++) {
        const next = cmd.commands.find((c) => c.name() === words[i]);
        if (!next) break;
        cmd = next;
      }
      if (cmd === program || cmd.commands.length > 0) {
        problems.push(`${line}: not a command`);
        continue;
      }
      const flags = new Set(cmd.options.flatMap((o) => [o.long, o.short]).filter((f): f is string => !!f));
      for (const w of words.slice(i).filter((w) => w.startsWith('-'))) {
        if (!flags.has(w) && !(w.startsWith('--no-') && flags.has(w))) problems.push(`${line}: ${w} is not an option of gnnctl ${cmd.name()}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('docs/cli.md lists every command gnnctl has, each with only flags that command takes', () => {
    const program = buildProgram();
    const cli = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
    const rows = [...cli.matchAll(/^\| `gnnctl ([^`]+)` \|/gm)].map((m) => (m[1] ?? '').replace(/\\\|/g, '|'));
    const documented = new Set<string>();
    const problems: string[] = [];
    for (const row of rows) {
      const words = row.split(/\s+/);
      let parents: Command[] = [program];
      let i = 0;
      // `rollout pin|start|…` names several commands in one row: follow each alternative.
      for (; i < words.length; i++) {
        const names = (words[i] ?? '').split('|');
        const next = parents.flatMap((p) => p.commands.filter((c) => names.includes(c.name())));
        if (next.length === 0) break;
        parents = next;
      }
      for (const cmd of parents) {
        if (cmd === program || cmd.commands.length > 0) {
          problems.push(`${row}: not a command`);
          continue;
        }
        const path: string[] = [];
        for (let c: Command | null = cmd; c && c !== program; c = c.parent) path.unshift(c.name());
        documented.add(path.join(' '));
        const flags = new Set(cmd.options.flatMap((o) => [o.long, o.short]).filter((f): f is string => !!f));
        for (const flag of words.slice(i).flatMap((w) => [...w.matchAll(/--[a-z][a-z0-9-]*/g)].map((m) => m[0]))) {
          if (!flags.has(flag)) problems.push(`gnnctl ${path.join(' ')}: ${flag} is not one of its options`);
        }
      }
    }
    const leaves = (c: Command, prefix: string[]): string[] =>
      c.commands.filter((s) => s.name() !== 'help').flatMap((s) => (s.commands.length ? leaves(s, [...prefix, s.name()]) : [[...prefix, s.name()].join(' ')]));
    expect(problems).toEqual([]);
    expect([...documented].sort()).toEqual(leaves(program, []).sort());
  });

  it('the layer lists in the README and docs/development.md are the layers of docs/architecture.md, in order', () => {
    const architecture = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const layers = [...architecture.matchAll(/^\| [0-9–-]+ \| ((?:`[a-z_]+`(?:, )?)+) \|/gm)].map((m) => [...(m[1] ?? '').matchAll(/`([a-z_]+)`/g)].map((f) => f[1]).sort());
    expect(layers.length).toBeGreaterThan(5);
    for (const file of ['README.md', 'docs/development.md']) {
      const text = readFileSync(join(ROOT, file), 'utf8').replace(/\s+/g, ' ');
      const chain = /`core`(?: \([^)]*\))? <[^.]*?`cli`/.exec(text)?.[0] ?? '';
      const groups = chain.split(' < ').map((g) => [...g.matchAll(/`([a-z_]+)`/g)].map((f) => f[1]).sort());
      expect(groups, file).toEqual(layers);
    }
  });

  it("the README's `runs list` output is what `runs list` prints for those runs", () => {
    const block = /^\$ npx gnnctl runs list\n([\s\S]*?)(?=^\$ |^```)/m.exec(README);
    expect(block, 'a `$ npx gnnctl runs list` example in the README').not.toBeNull();
    const lines = (block?.[1] ?? '').trimEnd().split('\n');
    const rows: RunRow[] = lines.slice(1).map((line) => {
      const m = /^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(?:(\S+) (\S+)|-)\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)$/.exec(line);
      expect(m, `a runs list row: ${line}`).not.toBeNull();
      const [, id = '', kind = '', task = '', status = '', served = '-', metric, value, created = ''] = m ?? [];
      return { id, kind, task, status, served: served === '-' ? null : served, metric: metric ?? null, value: value === undefined || value === 'n/a' ? null : Number(value), created: created.replace(' ', 'T'), dir: '' };
    });
    expect(rows.length).toBeGreaterThan(0);
    expect(formatRunsTable(rows, '')).toBe(lines.join('\n'));
  });
});
