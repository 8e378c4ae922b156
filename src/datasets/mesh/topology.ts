/**
 * The service graph of the synthetic mesh: tiers of services (gateways → frontends → mid-tier APIs →
 * backends → datastores), each calling a few services in lower tiers, as a Kubernetes mesh looks in a
 * service-dependency map. Calls only go down the tiers, so the graph is a DAG and one pass in tier order
 * propagates load, one pass in reverse propagates latency.
 */
import type { Rng } from '../../core/rng.js';

export const TIERS = ['gw', 'fe', 'mid', 'be', 'db'] as const;
export type Tier = (typeof TIERS)[number];

/** Share of services per tier (gateways few, mid-tier most), as real meshes skew. */
const TIER_SHARE: Record<Tier, number> = { gw: 0.03, fe: 0.15, mid: 0.4, be: 0.3, db: 0.12 };

export interface Service {
  name: string;
  tier: number;
  /** requests/s of external traffic at the daily mean (gateways only) */
  external: number;
  /** downstream calls per request served (fan-out of the handler) */
  fanout: number;
  /** own handling time, ms, at zero utilisation */
  baseLatency: number;
  baseError: number;
  /** requests/s one pod serves at 100% cpu */
  podCapacity: number;
  baseMemory: number;
  pods: number;
  /** out-edges: destination index → base share of this service's downstream calls (sums to 1) */
  out: Map<number, number>;
  alive: boolean;
}

export function buildTopology(rng: Rng, n: number): Service[] {
  const counts = TIERS.map((t) => Math.max(1, Math.round(n * TIER_SHARE[t])));
  // The rounding residue goes to the mid tier so the total is exactly n.
  counts[2]! += n - counts.reduce((a, b) => a + b, 0);
  const services: Service[] = [];
  const byTier: number[][] = TIERS.map(() => []);
  TIERS.forEach((tier, ti) => {
    for (let k = 0; k < counts[ti]!; k++) {
      byTier[ti]!.push(services.length);
      services.push({
        name: `${tier}-${String(k).padStart(3, '0')}`,
        tier: ti,
        external: 0,
        fanout: ti === 4 ? 0 : 1 + rng.next() * 1.5,
        baseLatency: ti === 4 ? 2 + rng.next() * 6 : 3 + rng.next() * 12,
        baseError: 0.0005 + rng.next() * 0.003,
        podCapacity: 40 + rng.next() * 80,
        baseMemory: 200 + rng.next() * 800,
        pods: 2,
        out: new Map(),
        alive: true,
      });
    }
  });
  for (const g of byTier[0]!) services[g]!.external = 150 + rng.next() * 350;
  for (let ti = 0; ti < 4; ti++) {
    for (const s of byTier[ti]!) {
      const k = 2 + rng.int(4);
      const targets = new Set<number>();
      while (targets.size < k) {
        // Mostly the next tier, sometimes two tiers down (a frontend reading a cache directly).
        const down = Math.min(4, ti + 1 + (rng.next() < 0.25 ? 1 : 0));
        const pool = byTier[down]!;
        targets.add(pool[rng.int(pool.length)]!);
        if (targets.size >= pool.length + (down < 4 ? byTier[down + 1]!.length : 0)) break;
      }
      setShares(rng, services[s]!, [...targets]);
    }
  }
  // Every service below the gateways gets at least one caller, so none is unreachable.
  for (let ti = 1; ti < 5; ti++) {
    for (const d of byTier[ti]!) {
      const called = services.some((s) => s.out.has(d));
      if (called) continue;
      const callers = byTier[ti - 1]!;
      const c = services[callers[rng.int(callers.length)]!]!;
      setShares(rng, c, [...c.out.keys(), d]);
    }
  }
  return services;
}

/** Random shares over `targets` (a flattened Dirichlet: no destination gets a negligible share). */
export function setShares(rng: Rng, s: Service, targets: number[]): void {
  const w = targets.map(() => 0.4 + rng.next());
  const sum = w.reduce((a, b) => a + b, 0);
  s.out = new Map(targets.map((t, i) => [t, w[i]! / sum]));
}

/** Indices in tier order (the DAG's topological order). */
export function tierOrder(services: Service[]): number[] {
  return services.map((_, i) => i).sort((a, b) => services[a]!.tier - services[b]!.tier || a - b);
}
