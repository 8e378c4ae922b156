/**
 * Pod (or instance) name → service, as SQL over a name column. Telemetry is scraped per pod, while the
 * model and the root-cause labels speak of services; replicas and replaced pods (new name suffixes after a
 * redeploy) must land on one node or every rollout looks like a new service.
 */
import type { AnomalyConfig } from '../config/anomaly_schema.js';
import { lit } from '../data/duck.js';

export type ServiceFrom = NonNullable<AnomalyConfig['metrics']['service_from']>;

/**
 * A Kubernetes Deployment pod ends in `-<pod-template hash>-<5 random>`, a StatefulSet pod in `-<ordinal>`;
 * both suffixes use Kubernetes' name alphabet (consonants and digits 2–9), which keeps `user-cache` whole.
 */
export const REPLICA_SUFFIX = '-[bcdfghjklmnpqrstvwxz2-9]{6,10}-[bcdfghjklmnpqrstvwxz2-9]{5}$|-[0-9]+$';

/** SQL mapping the VARCHAR expression `expr` to its service under `rule` (none: the name itself). */
export function serviceSql(expr: string, rule: ServiceFrom | undefined): string {
  if (rule === undefined) return expr;
  if (rule === 'strip_replica') return `regexp_replace(${expr}, ${lit(REPLICA_SUFFIX)}, '')`;
  return `coalesce(nullif(regexp_extract(${expr}, ${lit(rule.pattern)}, 1), ''), ${expr})`;
}

/** The same rule in JS (labels read outside DuckDB, tests). */
export function serviceOf(name: string, rule: ServiceFrom | undefined): string {
  if (rule === undefined) return name;
  if (rule === 'strip_replica') return name.replace(new RegExp(REPLICA_SUFFIX), '');
  const m = new RegExp(rule.pattern).exec(name);
  return m?.[1] ? m[1] : name;
}
