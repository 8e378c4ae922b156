/**
 * The computation tree of a heterogeneous GNN rooted at one node type: which node types sit at which
 * depth, reached over which edge type, with how many sampled neighbours. Sampling, feature gathering and
 * the model all walk this plan, so every tensor has a fixed shape: slot s holds `width(s)` nodes per seed.
 *
 * Hop d (1-based) uses `num_neighbors[d − 1]`; a foreign-key edge (child → parent) has at most one
 * neighbour, so its fanout is always 1. Layer l (1..L) updates every slot at depth ≤ L − l from its
 * children, so the root's final representation sees L hops.
 */
import { ConfigError } from '../core/errors.js';
import type { Graph, EdgeType } from '../graph/graph.js';

export type Fanout = number | Record<string, number>;

export interface Slot {
  index: number;
  depth: number;
  type: string;
  /** the parent slot (−1 for the root) and the edge type from the parent's type to this slot's type */
  parent: number;
  edge: string | null;
  /** neighbours per parent node */
  fanout: number;
  /** nodes per seed: product of fanouts from the root */
  width: number;
  children: number[];
}

export interface Plan {
  root: string;
  layers: number;
  slots: Slot[];
}

export function fanoutFor(f: Fanout, edge: EdgeType): number {
  if (typeof f === 'number') return f;
  return f[edge.name] ?? f.default ?? 0;
}

/** Builds the tree: every edge type leaving a node type is followed, to `fanouts.length` hops. */
export function buildPlan(graph: Pick<Graph, 'edges'>, root: string, fanouts: Fanout[]): Plan {
  const names = new Set(graph.edges.map((e) => e.name));
  for (const f of fanouts) {
    if (typeof f === 'number') continue;
    for (const k of Object.keys(f)) {
      if (k !== 'default' && !names.has(k)) {
        throw new ConfigError(`num_neighbors names an unknown edge type "${k}"`, [], { hint: `edge types: ${[...names].join(', ')}` });
      }
    }
  }
  const slots: Slot[] = [{ index: 0, depth: 0, type: root, parent: -1, edge: null, fanout: 1, width: 1, children: [] }];
  for (let i = 0; i < slots.length; i++) {
    const s = slots[i]!;
    if (s.depth >= fanouts.length) continue;
    for (const e of graph.edges.filter((x) => x.src === s.type)) {
      const f = e.kind === 'fk' ? (fanoutFor(fanouts[s.depth]!, e) > 0 ? 1 : 0) : fanoutFor(fanouts[s.depth]!, e);
      if (f === 0) continue;
      const child: Slot = { index: slots.length, depth: s.depth + 1, type: e.dst, parent: i, edge: e.name, fanout: f, width: s.width * f, children: [] };
      s.children.push(child.index);
      slots.push(child);
    }
  }
  return { root, layers: fanouts.length, slots };
}

/** Slots whose representation layer l (1-based) computes: depth ≤ layers − l. */
export function slotsAtLayer(plan: Plan, layer: number): Slot[] {
  return plan.slots.filter((s) => s.depth <= plan.layers - layer);
}
