import { fairShareFinish, type LinkTransfer, type SharedLink, type TpUnderSharing } from '../links/link-sharing.ts';
import type { StageOps } from './dp-sync.ts';

/** What one shared link added on one stage (stageLinkSharing). */
export interface StageLinkShare {
  readonly share: SharedLink;
  /** How much later the DP stream's stretches end, ms. */
  readonly sharedMs: number;
  /** How much later the compute the partner's traffic holds ends, ms. */
  readonly computeDelayMs: number;
}

/** The pipeline's p2p as the stage's stretches meet it: each send's ms, and whether a send blocks its sender (1F1B). */
export interface StageP2p {
  readonly p2pMs: number;
  readonly blocks: boolean;
  /** Stages p and chunks v: the last stage's last chunk sends no activation on, the first's first receives none. */
  readonly p: number;
  readonly v: number;
}

/**
 * The overlapped gradient sync of stage `stage` sharing links with TP or pipeline traffic (max-min
 * fair share, fairShareFinish), on the unshared schedule: each busy stretch of the DP stream
 * before the stage's end (buckets back to back, len ms) is one transfer. TP on the link: its
 * collectives in that stretch are len·uB of link time issued with it, and the backward under it
 * runs at the layer re-scheduled with the TP link at C/2 (len·slowB later, after what still hides).
 * Pipeline on the link: each p2p that meets the stretch (a backward's receive before it, its send
 * after it) is a transfer of p2p ms; a receive's delay holds the op that needs it, a blocking
 * send's its sender. `busy`: the DP stream's busy stretches (none without --overlap-grad-reduce).
 */
export function stageLinkSharing(
  stage: number,
  ops: StageOps,
  stageEndMs: number,
  busy: readonly { readonly t0: number; readonly t1: number }[],
  shares: readonly SharedLink[],
  tpShare: TpUnderSharing | undefined,
  p2p: StageP2p,
): StageLinkShare[] {
  const { t0, t1 } = ops;
  const stretches = busy.flatMap((b) => (b.t0 < stageEndMs ? [{ t0: b.t0, t1: Math.min(b.t1, stageEndMs) }] : []));
  const out: StageLinkShare[] = [];
  for (const share of shares) {
    let shared = 0;
    let delay = 0;
    for (const b of stretches) {
      const len = b.t1 - b.t0;
      // Below 1e-9 of the stage's span it is rounding (a single bucket issued at the end).
      if (len <= 1e-9 * stageEndMs) continue;
      const partner: { x: LinkTransfer; holds: boolean }[] = [];
      if (share.with === 'tp' && tpShare) {
        partner.push({ x: { startMs: b.t0, aloneMs: len * tpShare.uB }, holds: false });
        delay += len * tpShare.slowB;
      } else if (share.with === 'pp')
        for (let j = 0; j < ops.chunk.length; j++) {
          if (ops.forward[j]) continue;
          const ch = ops.chunk[j]!;
          const sends: { x: LinkTransfer; holds: boolean }[] = [];
          if (!(stage === p2p.p - 1 && ch === p2p.v - 1))
            sends.push({ x: { startMs: t0[j]! - p2p.p2pMs, aloneMs: p2p.p2pMs }, holds: true });
          if (!(stage === 0 && ch === 0)) sends.push({ x: { startMs: t1[j]!, aloneMs: p2p.p2pMs }, holds: p2p.blocks });
          for (const q of sends) if (q.x.startMs < b.t1 && q.x.startMs + q.x.aloneMs > b.t0) partner.push(q);
        }
      if (!partner.length) continue;
      const done = fairShareFinish([{ startMs: b.t0, aloneMs: len }, ...partner.map((q) => q.x)]);
      shared += done[0]! - b.t1;
      partner.forEach((q, k) => {
        if (q.holds) delay += done[k + 1]! - q.x.startMs - q.x.aloneMs;
      });
    }
    if (shared <= 0 && delay <= 0) continue;
    out.push({ share, sharedMs: shared, computeDelayMs: delay });
  }
  return out;
}
