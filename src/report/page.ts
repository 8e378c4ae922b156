/**
 * The HTML shell: doctype, inline stylesheet (screen and print), and the sections in order. No script,
 * font, image or link leaves the file: the report must open from a laptop on a plane, an archived CI
 * artifact or a printout. Tooltips are native SVG `<title>`s, so nothing needs JavaScript.
 */
import { esc } from './format.js';

export interface PageOptions {
  title: string;
  /** the `<header>` markup */
  header: string;
  /** `<section>` markups in order */
  sections: string[];
  /** e.g. run id and kind, for `<meta name="description">` */
  description: string;
}

export function page(o: PageOptions): string {
  return (
    '<!DOCTYPE html>\n' +
    '<html lang="en">' +
    '<head>' +
    '<meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<meta name="description" content="${esc(o.description)}">` +
    '<meta name="generator" content="gnnctl report">' +
    `<title>${esc(o.title)}</title>` +
    `<style>${CSS}</style>` +
    '</head>' +
    `<body><div class="page">${o.header}<main>${o.sections.join('\n')}</main>` +
    '<footer><p>Made by <code>gnnctl report</code>. Self-contained: no scripts, fonts or network requests. Hover points and bars for exact values.</p></footer>' +
    '</div></body></html>\n'
  );
}

const CSS = `
:root {
  --fg: #1f2328; --muted: #59636e; --line: #d7dce1; --soft: #f5f7f9; --accent: #0b5cad;
  --good: #1a7a3a; --good-bg: #e6f4ea; --bad: #b42318; --bad-bg: #fdecea; --warn-bg: #fff4e0;
  --mono: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, "Liberation Mono", monospace;
  color-scheme: light;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: #fff; color: var(--fg); font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans", "Liberation Sans", "DejaVu Sans", Arial, sans-serif; font-variant-numeric: tabular-nums; }
.page { max-width: 1200px; margin: 0 auto; padding: 28px 32px 40px; }
h1 { font-size: 28px; line-height: 1.2; margin: 2px 0 6px; }
h2 { font-size: 20px; margin: 0 0 6px; padding-bottom: 6px; border-bottom: 2px solid var(--fg); }
h3 { font-size: 15px; margin: 14px 0 6px; }
p { margin: 6px 0; }
code { font-family: var(--mono); font-size: 0.9em; background: var(--soft); padding: 1px 5px; border-radius: 4px; overflow-wrap: anywhere; }
a { color: var(--accent); }
.muted { color: var(--muted); }
.small { font-size: 13px; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
header { padding-bottom: 10px; margin-bottom: 8px; }
.eyebrow { text-transform: uppercase; letter-spacing: .08em; font-size: 12px; font-weight: 600; color: var(--muted); margin: 0; }
.run-id { margin: 0 0 12px; font-size: 15px; }
.generated { font-size: 12px; color: var(--muted); margin-top: 10px; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(330px, 1fr)); gap: 0 28px; margin: 0; }
.grid .facts { grid-template-columns: minmax(0, 1fr); }
.query { margin: 10px 0 0; font-size: 14px; }
.query .muted { font-size: 13px; margin-right: 8px; }
.facts > div { display: flex; gap: 10px; padding: 5px 0; border-bottom: 1px solid var(--line); min-width: 0; }
.facts dt { flex: 0 0 150px; color: var(--muted); font-size: 13px; padding-top: 1px; }
.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
nav ol { list-style: none; display: flex; flex-wrap: wrap; gap: 6px; padding: 0; margin: 14px 0 0; }
nav a { display: inline-block; font-size: 13px; padding: 3px 10px; border: 1px solid var(--line); border-radius: 999px; text-decoration: none; }
nav a:hover { background: var(--soft); }
.status { display: inline-block; font-size: 12px; font-weight: 600; padding: 1px 8px; border-radius: 999px; background: var(--soft); border: 1px solid var(--line); vertical-align: 1px; }
.status-complete { color: var(--good); background: var(--good-bg); border-color: #b7dfc3; }
.status-interrupted, .status-running { color: #8a4b00; background: var(--warn-bg); border-color: #f0cf99; }
.status-failed { color: var(--bad); background: var(--bad-bg); border-color: #f3b8b2; }
section { margin: 30px 0 0; }
.intro { color: var(--muted); max-width: 92ch; margin: 2px 0 14px; }
.summary { font-size: 16px; max-width: 100ch; margin: 14px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(175px, 1fr)); gap: 12px; margin: 12px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; background: #fff; }
.card.emphasis { border-color: var(--accent); box-shadow: inset 4px 0 0 var(--accent); }
.card.good { box-shadow: inset 4px 0 0 var(--good); }
.card.bad { box-shadow: inset 4px 0 0 var(--bad); }
.card-label { font-size: 12px; color: var(--muted); font-weight: 600; }
.card-value { font-size: 26px; font-weight: 650; line-height: 1.25; margin: 2px 0; }
.card.compact .card-value { font-size: 20px; line-height: 1.6; }
.card.good .card-value { color: var(--good); }
.card.bad .card-value { color: var(--bad); }
.card-sub { font-size: 12.5px; color: var(--muted); overflow-wrap: anywhere; }
.grid { display: grid; gap: 18px 28px; align-items: start; }
.grid2 { grid-template-columns: repeat(2, minmax(0, 1fr)); }
.grid3 { grid-template-columns: repeat(3, minmax(0, 1fr)); }
.grid2.wide-first { grid-template-columns: minmax(0, 1.1fr) minmax(0, 1fr); }
@media (max-width: 900px) { .grid2, .grid3, .grid2.wide-first { grid-template-columns: minmax(0, 1fr); } }
figure { margin: 0; min-width: 0; }
figure.full { margin: 10px 0 6px; }
figure.medium { max-width: 760px; margin: 6px 0 12px; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; }
svg.chart { display: block; width: 100%; height: auto; font-size: 12px; fill: var(--fg); }
svg.chart text { fill: #30363d; }
svg.chart .grid line { stroke: #e3e6ea; stroke-width: 1; }
svg.chart .axis line { stroke: #4a5058; stroke-width: 1; }
svg.chart .axis-title { font-size: 12.5px; font-weight: 600; fill: var(--fg); }
svg.chart .legend text { font-size: 12px; }
svg.chart .bar-label, svg.chart .lane-label { font-size: 12.5px; }
svg.chart .bar-value { font-size: 12px; font-weight: 600; }
svg.chart .bar-value .note { font-weight: 400; fill: var(--muted); }
svg.chart .count { font-size: 10.5px; fill: #4a5058; }
svg.chart .count.inside { fill: #fff; font-weight: 600; }
svg.chart .empty { fill: var(--muted); font-size: 14px; }
svg.chart circle:hover, svg.chart rect:hover { opacity: .8; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 14px; margin: 4px 0 8px; }
caption { text-align: left; font-weight: 600; font-size: 13px; color: var(--muted); padding: 4px 0 6px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { font-size: 12.5px; color: var(--muted); font-weight: 600; border-bottom: 1.5px solid #aab2bb; }
tbody th { font-weight: 500; }
.num { text-align: right; white-space: nowrap; }
table.compact th, table.compact td { padding: 3px 10px; }
tr.best { background: #eef7f0; }
.tag { font-size: 11px; font-weight: 600; color: var(--good); border: 1px solid #b7dfc3; background: var(--good-bg); border-radius: 4px; padding: 0 5px; margin-left: 4px; }
.delta.good { color: var(--good); font-weight: 600; }
.delta.bad { color: var(--bad); font-weight: 600; }
.badge { display: inline-block; font-size: 11.5px; font-weight: 600; border-radius: 4px; padding: 0 6px; margin-left: 4px; }
.badge.good { color: var(--good); background: var(--good-bg); }
.badge.bad { color: var(--bad); background: var(--bad-bg); }
.meter { display: block; height: 8px; background: #e9ecef; border-radius: 4px; overflow: hidden; margin-top: 4px; min-width: 80px; }
.meter > span { display: block; height: 100%; background: #6b7480; }
.meter.good > span { background: var(--good); }
.meter.bad > span { background: var(--bad); }
.note { border-left: 4px solid var(--accent); background: var(--soft); padding: 8px 12px; border-radius: 0 6px 6px 0; }
.note.warn { border-left-color: #c77700; background: var(--warn-bg); }
.chips { list-style: none; padding: 0; margin: 6px 0; display: flex; flex-wrap: wrap; gap: 5px; }
.chips li { font-family: var(--mono); font-size: 12px; background: var(--soft); border: 1px solid var(--line); border-radius: 4px; padding: 1px 6px; }
.chips li.more { font-family: inherit; color: var(--muted); }
details.config { margin-top: 14px; }
details.config summary { cursor: pointer; font-weight: 600; font-size: 14px; }
details.config pre { font-family: var(--mono); font-size: 12px; background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; overflow: auto; max-height: 480px; }
footer { margin-top: 36px; padding-top: 10px; border-top: 1px solid var(--line); font-size: 12px; color: var(--muted); }
@media print {
  @page { size: A4; margin: 12mm; }
  body { font-size: 10.5pt; }
  .page { max-width: none; padding: 0; }
  nav, footer { display: none; }
  section { break-inside: auto; margin-top: 18px; }
  h2, h3 { break-after: avoid; }
  figure, .cards, .card, tr, .facts > div { break-inside: avoid; }
  /* One column on paper: side-by-side charts would shrink their text below 6 pt. */
  .grid2, .grid3, .grid2.wide-first { grid-template-columns: minmax(0, 1fr); }
  svg.chart { max-width: 135mm; }
  figure.medium svg.chart, figure.full svg.chart { max-width: 100%; }
  .table-wrap { overflow: visible; }
  table { font-size: 9pt; }
  thead th.num { white-space: normal; }
  .cards { grid-template-columns: repeat(3, minmax(0, 1fr)); }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  a { color: inherit; text-decoration: none; }
  details.config pre { max-height: none; overflow: visible; white-space: pre-wrap; }
}
`;
