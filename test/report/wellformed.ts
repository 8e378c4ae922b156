/**
 * A strict structural check of the report's markup (stricter than HTML5 parsing, which repairs almost
 * anything): every non-void element is closed in order, raw text has no stray `<`, every `&` starts an
 * entity, attribute values are quoted, and ids are unique. Returns the problems found (empty = fine).
 */
const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr']);
const RAW_TEXT = new Set(['style', 'script']);

export interface Element {
  name: string;
  attrs: Record<string, string>;
}

export function checkWellFormed(html: string): string[] {
  const problems: string[] = [];
  const stack: string[] = [];
  const ids = new Set<string>();
  const tag = /<!--[\s\S]*?-->|<!DOCTYPE[^>]*>|<\/([a-zA-Z][\w:-]*)\s*>|<([a-zA-Z][\w:-]*)((?:\s+[^\s=/>]+(?:="[^"]*")?)*)\s*(\/?)>/gy;
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    const text = html.slice(i, lt === -1 ? html.length : lt);
    checkText(text, i, problems);
    if (lt === -1) break;
    tag.lastIndex = lt;
    const m = tag.exec(html);
    if (!m) {
      problems.push(`stray "<" or malformed tag at ${lt}: ${JSON.stringify(html.slice(lt, lt + 60))}`);
      i = lt + 1;
      continue;
    }
    i = tag.lastIndex;
    const [, close, open, attrText, selfClose] = m;
    if (close) {
      const top = stack.pop();
      if (top !== close.toLowerCase()) problems.push(`</${close}> at ${lt} closes <${top ?? 'nothing'}>`);
    } else if (open) {
      const name = open.toLowerCase();
      const attrs = parseAttrs(attrText ?? '');
      if (attrs.id !== undefined) {
        if (ids.has(attrs.id)) problems.push(`duplicate id "${attrs.id}"`);
        ids.add(attrs.id);
      }
      for (const v of Object.values(attrs)) checkText(v, lt, problems);
      if (selfClose || VOID.has(name)) continue;
      if (RAW_TEXT.has(name)) {
        const end = html.indexOf(`</${name}>`, i);
        if (end === -1) problems.push(`<${name}> at ${lt} never closes`);
        i = end === -1 ? html.length : end + name.length + 3;
        continue;
      }
      stack.push(name);
    }
  }
  if (stack.length) problems.push(`unclosed elements at the end: ${stack.join(' > ')}`);
  return problems;
}

function checkText(text: string, at: number, problems: string[]): void {
  const amp = /&(?!(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);)/g;
  const m = amp.exec(text);
  if (m) problems.push(`bare "&" at ${at + m.index}: ${JSON.stringify(text.slice(m.index, m.index + 20))}`);
}

export function parseAttrs(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of s.matchAll(/([^\s=/>]+)(?:="([^"]*)")?/g)) out[m[1]!] = m[2] ?? '';
  return out;
}

/** All opening tags named `name` whose attributes match `where` (exact values), in document order. */
export function findElements(html: string, name: string, where: Record<string, string> = {}): Element[] {
  const out: Element[] = [];
  const re = new RegExp(`<${name}((?:\\s+[^\\s=/>]+(?:="[^"]*")?)*)\\s*/?>`, 'g');
  for (const m of html.matchAll(re)) {
    const attrs = parseAttrs(m[1] ?? '');
    if (Object.entries(where).every(([k, v]) => attrs[k] === v)) out.push({ name, attrs });
  }
  return out;
}

/** The markup between `<tag id="id" …>` and its matching close tag. */
export function elementById(html: string, id: string): string | null {
  const start = html.search(new RegExp(`<([a-zA-Z][\\w-]*)[^>]*\\sid="${id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`));
  if (start === -1) return null;
  const name = /^<([a-zA-Z][\w-]*)/.exec(html.slice(start))![1]!;
  const re = new RegExp(`<${name}[\\s>]|</${name}>`, 'g');
  re.lastIndex = start + 1;
  let depth = 1;
  for (let m = re.exec(html); m; m = re.exec(html)) {
    depth += m[0].startsWith('</') ? -1 : 1;
    if (depth === 0) return html.slice(start, m.index + m[0].length);
  }
  return null;
}

/** Text content of markup: tags dropped, the few entities the report writes decoded. */
export function textOf(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}
