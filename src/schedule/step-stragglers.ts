import type { Timeline } from './schedule.ts';
import { analyseStragglers, type StragglerAnalysis } from './stragglers.ts';

/** Which collective of the plan a call is: its op index and name ("attn.out.allreduce"). */
export interface PlanCallKey {
  readonly opIndex: number;
  readonly op: string;
}

/**
 * The stragglers of a scheduled step: each collective of the plan is one call, every rank's event
 * of it an entry [arrival, end); `analyseStragglers` names who entered last and who waited.
 */
export function stepStragglers(tl: Timeline): StragglerAnalysis<PlanCallKey> {
  const by = new Map<number, { key: PlanCallKey; entries: { rank: number; t0: number; t1: number }[] }>();
  for (const e of tl.events) {
    if (e.stream !== 'comm') continue;
    let c = by.get(e.opIndex);
    if (!c) by.set(e.opIndex, (c = { key: { opIndex: e.opIndex, op: e.op }, entries: [] }));
    c.entries.push({ rank: e.rank, t0: e.t0, t1: e.t1 });
  }
  return analyseStragglers([...by.values()].sort((a, b) => a.key.opIndex - b.key.opIndex));
}
