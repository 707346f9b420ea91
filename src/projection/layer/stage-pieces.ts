import type { LayerPlan } from '../../parallel/plan-types.ts';
import type { Timeline } from '../../schedule/schedule.ts';

/** One pass of a part of the model on one rank: its time and its exposed TP communication, ms. */
export interface PassTime {
  readonly ms: number;
  readonly exposedMs: number;
}

/**
 * The pieces a pipeline stage is built from, per micro-batch: one transformer layer, the
 * embedding (first stage) and the output layer with the loss (last stage), each forward and
 * backward, read off the two scheduled plans (`full` = embedding + one layer + output + loss,
 * `block` = the layer alone). The full plan runs the embedding's ops, then the layer's (as many
 * as the block plan has), then the output's and loss's; its backward runs them in reverse. The
 * pieces add up: embedding + layer + output = full, pass by pass.
 */
export interface StagePieces {
  readonly layer: { readonly forward: PassTime; readonly backward: PassTime };
  readonly embedding: { readonly forward: PassTime; readonly backward: PassTime };
  readonly output: { readonly forward: PassTime; readonly backward: PassTime };
}

/** Rank 0's time up to the end of its forward ops and its exposed communication in them. */
const rank0 = (t: Timeline) => t.events.filter((e) => e.rank === 0);

/** The worst rank's exposed communication in a pass. */
function exposedIn(t: Timeline, phase: 'forward' | 'backward'): number {
  const per = new Map<number, number>();
  for (const e of t.events) if (e.phase === phase) per.set(e.rank, (per.get(e.rank) ?? 0) + e.exposedMs);
  return Math.max(0, ...per.values());
}

/** End of the forward pass (the last forward event's end), ms. */
const forwardEnd = (t: Timeline): number =>
  Math.max(0, ...t.events.filter((e) => e.phase === 'forward').map((e) => e.t1));

/** Splits the scheduled full plan into embedding, layer and output pieces (see StagePieces). */
export function stagePieces(full: LayerPlan, fullT: Timeline, block: LayerPlan, blockT: Timeline): StagePieces {
  const layerF = forwardEnd(blockT);
  const layer = {
    forward: { ms: layerF, exposedMs: exposedIn(blockT, 'forward') },
    backward: { ms: blockT.stepMs - layerF, exposedMs: exposedIn(blockT, 'backward') },
  };
  if (full === block) {
    const none = { ms: 0, exposedMs: 0 };
    return { layer, embedding: { forward: none, backward: none }, output: { forward: none, backward: none } };
  }
  const fwdOps = full.ops.filter((o) => o.phase === 'forward');
  const bwdOps = full.ops.filter((o) => o.phase === 'backward');
  const blockFwd = block.ops.filter((o) => o.phase === 'forward').length;
  const blockBwd = block.ops.filter((o) => o.phase === 'backward').length;
  // The embedding's forward ops come before the first op of norm1's gain (the layer's first op);
  // its backward ops after the last.
  const embFwd = fwdOps.findIndex((o) => o.weight === 'g1');
  const lastG1 = bwdOps.map((o) => o.weight === 'g1').lastIndexOf(true);
  const embBwd = bwdOps.length - 1 - lastG1;
  const outBwd = bwdOps.length - blockBwd - embBwd;
  const indexSet = (ops: typeof fwdOps, from: number, to: number): Set<number> =>
    new Set(ops.slice(from, to).map((o) => o.index));
  const embF = indexSet(fwdOps, 0, embFwd);
  const outF = indexSet(fwdOps, embFwd + blockFwd, fwdOps.length);
  const outB = indexSet(bwdOps, 0, outBwd);
  const embB = indexSet(bwdOps, outBwd + blockBwd, bwdOps.length);
  const ev = rank0(fullT);
  const endOf = (set: Set<number>): number => Math.max(0, ...ev.filter((e) => set.has(e.opIndex)).map((e) => e.t1));
  const exposedOf = (set: Set<number>): number =>
    ev.filter((e) => set.has(e.opIndex)).reduce((a, e) => a + e.exposedMs, 0);
  const fullF = forwardEnd(fullT);
  const embForward = endOf(embF);
  const outForward = fullF - embForward - layer.forward.ms;
  const outBackward = endOf(outB) - fullF;
  const embBackward = fullT.stepMs - fullF - outBackward - layer.backward.ms;
  return {
    layer,
    embedding: {
      forward: { ms: embForward, exposedMs: exposedOf(embF) },
      backward: { ms: embBackward, exposedMs: exposedOf(embB) },
    },
    output: {
      forward: { ms: outForward, exposedMs: exposedOf(outF) },
      backward: { ms: outBackward, exposedMs: exposedOf(outB) },
    },
  };
}
