import type { PlannedEvent, Snapshot } from './source.js';

/** Events in (prev, ts] for each snapshot, in order. */
export function eventsBetween(events: PlannedEvent[], snapshots: Snapshot[], before = Number.NEGATIVE_INFINITY): PlannedEvent[][] {
  const out: PlannedEvent[][] = [];
  let k = 0;
  let prev = before;
  for (const s of snapshots) {
    while (k < events.length && events[k]!.ts <= prev) k++;
    const batch: PlannedEvent[] = [];
    while (k < events.length && events[k]!.ts <= s.ts) batch.push(events[k++]!);
    out.push(batch);
    prev = s.ts;
  }
  return out;
}
