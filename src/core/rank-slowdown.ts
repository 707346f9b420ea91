// A straggler on purpose (seed 004 M108, docs/sources.md): one rank's compute (#slow) or its outgoing
// link (#slowlink) made f× slower by doing f× the real work, never by sleeping.
import { quoted } from './quote.ts';

/** Rank `rank` does `factor`× the work: each of its kernels dispatched f times, or each of its sends made f times. */
export interface RankSlowdown {
  readonly rank: number;
  readonly factor: number;
}

/**
 * The largest factor accepted: f dispatches per kernel (or f copies per send) cost f× the time
 * and, for the compute, f× the encoding; beyond 16 a step of the larger presets takes minutes.
 */
export const maxSlowdownFactor = 16;

/**
 * Parses "off" (null) or "r:f" — rank r, factor f a whole number from 1 to maxSlowdownFactor —
 * or throws a message naming the setting `key` and what to write instead.
 */
export function parseRankSlowdown(key: string, text: string): RankSlowdown | null {
  if (text === 'off' || text === '') return null;
  const m = /^(\d+):(\S+)$/.exec(text);
  const how = `write ${key}=r:f (rank r does f× the work, f a whole number 1–${maxSlowdownFactor}) or ${key}=off`;
  if (!m) throw new Error(`${key} ${quoted(text)} is not rank:factor; ${how}.`);
  const rank = Number(m[1]);
  const factor = Number(m[2]);
  if (!Number.isSafeInteger(rank)) throw new Error(`${key}: the rank ${quoted(m[1]!)} is too large; ${how}.`);
  if (!Number.isInteger(factor) || factor < 1 || factor > maxSlowdownFactor)
    throw new Error(
      `${key}: the factor ${quoted(m[2]!)} must be a whole number from 1 to ${maxSlowdownFactor} ` +
        `(${factor < 1 ? 'below 1 would make the rank faster, which extra work cannot' : 'f× the real work per kernel or send'}); ${how}.`,
    );
  return { rank, factor };
}

/** "r:f", or "off" for null: the inverse of parseRankSlowdown. */
export function formatRankSlowdown(s: RankSlowdown | null): string {
  return s ? `${s.rank}:${s.factor}` : 'off';
}

/** The message when `s` names a rank the TP group of degree t does not have; null when it fits. */
export function slowdownRankIssue(key: string, s: RankSlowdown | null, t: number): string | null {
  if (!s || s.rank < t) return null;
  return `${key}=${formatRankSlowdown(s)} names rank ${s.rank}, but t = ${t} has ranks 0–${t - 1}; pick one of them or set ${key}=off.`;
}

/** The factor rank `rank` runs at under `s` (1 when it is not the slowed rank). */
export function slowdownOf(s: RankSlowdown | null | undefined, rank: number): number {
  return s && s.rank === rank ? s.factor : 1;
}
