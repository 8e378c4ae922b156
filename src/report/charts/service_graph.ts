/**
 * A service's neighbourhood in the call graph: the centre service in the middle, its callers and callees
 * on a circle around it, calls as arrows (caller → callee, width by calls per second). Services that the
 * root-cause ranking listed carry their rank. A fixed circular layout, not a force simulation, so the
 * same graph always draws the same picture (and the report stays free of scripts).
 */
import { esc } from '../format.js';
import { COLORS, emptyChart, svg } from './frame.js';
import { px } from './scale.js';

export interface ServiceGraphOptions {
  id: string;
  title: string;
  desc: string;
  /** the centre first */
  nodes: { service: string; rank: number | null }[];
  edges: { source: string; destination: string; rate: number }[];
  width?: number;
  height?: number;
}

const NODE_R = 9;

export function serviceGraph(o: ServiceGraphOptions): string {
  const width = o.width ?? 620;
  const height = o.height ?? 420;
  const svgOpts = { id: o.id, title: o.title, desc: o.desc, width, height };
  if (o.nodes.length === 0) return emptyChart(svgOpts, 'no services recorded');
  const cx = width / 2;
  const cy = height / 2;
  const radius = Math.min(width, height) / 2 - 60;
  const at = new Map<string, [number, number]>();
  o.nodes.forEach((n, i) => {
    if (i === 0) at.set(n.service, [cx, cy]);
    else {
      const a = -Math.PI / 2 + ((i - 1) * 2 * Math.PI) / (o.nodes.length - 1);
      at.set(n.service, [cx + radius * Math.cos(a), cy + radius * Math.sin(a)]);
    }
  });
  const maxRate = Math.max(1e-9, ...o.edges.map((e) => e.rate));
  const parts = [
    `<defs><marker id="${esc(o.id)}-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="${COLORS.reference}"/></marker></defs>`,
    `<g class="edges" data-n="${o.edges.length}">`,
  ];
  for (const e of o.edges) {
    const a = at.get(e.source);
    const b = at.get(e.destination);
    if (!a || !b) continue;
    const len = Math.hypot(b[0] - a[0], b[1] - a[1]) || 1;
    // stop short of the callee's circle so the arrow head stays visible
    const ux = (b[0] - a[0]) / len;
    const uy = (b[1] - a[1]) / len;
    const w = 1 + 3 * Math.sqrt(Math.max(0, e.rate) / maxRate);
    parts.push(
      `<line class="call" data-source="${esc(e.source)}" data-destination="${esc(e.destination)}" x1="${px(a[0] + ux * NODE_R)}" y1="${px(a[1] + uy * NODE_R)}" x2="${px(b[0] - ux * (NODE_R + 3))}" y2="${px(b[1] - uy * (NODE_R + 3))}" stroke="${COLORS.reference}" stroke-width="${px(w)}" stroke-opacity="0.8" marker-end="url(#${esc(o.id)}-arrow)"><title>${esc(`${e.source} → ${e.destination}: ${e.rate.toPrecision(3)} calls/s`)}</title></line>`,
    );
  }
  parts.push('</g><g class="nodes">');
  o.nodes.forEach((n, i) => {
    const [x, y] = at.get(n.service)!;
    const colour = i === 0 ? COLORS.baseline : n.rank !== null ? COLORS.teacher : COLORS.muted;
    const label = `${n.service}${n.rank !== null ? ` (#${n.rank})` : ''}`;
    const below = y >= cy;
    parts.push(
      `<g class="service" data-service="${esc(n.service)}"${n.rank !== null ? ` data-rank="${n.rank}"` : ''}><circle cx="${px(x)}" cy="${px(y)}" r="${i === 0 ? NODE_R + 3 : NODE_R}" fill="${colour}" stroke="#fff" stroke-width="1.5"><title>${esc(i === 0 ? `${label}: ranked first as root cause` : label)}</title></circle>` +
        `<text x="${px(x)}" y="${px(below ? y + NODE_R + 16 : y - NODE_R - 7)}" text-anchor="middle" paint-order="stroke" stroke="#fff" stroke-width="4" stroke-linejoin="round"${i === 0 ? ' font-weight="650"' : ''}>${esc(label)}</text></g>`,
    );
  });
  parts.push('</g>');
  return svg(svgOpts, parts.join(''));
}
