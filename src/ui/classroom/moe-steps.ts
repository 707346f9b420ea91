// The MoE block's classroom steps with real tensors (pure, no DOM): the single-device float64 block
// (reference/moe) on the very tokens the ranks route (moeProblem: rank q's rows q·T…), read step by step —
// the router and top-k, the permutation, who sends which tokens to whom, the grouped GEMM, the combine,
// the aux loss pushing load back, and M036's duplicates without SP — each count checked against what the
// ranks' run of the same block measured (tokens per expert, bytes per peer, expert rows, the aux loss).
import { moeForward } from '../../reference/moe/block.ts';
import { auxLoss, auxLossCounts } from '../../reference/moe/losses.ts';
import { moeProblem, rankRows, type MoeProblem } from '../../parallel/moe-oracle.ts';
import { moeWorld, type MoeLayout } from '../../parallel/moe-layout.ts';
import { moeRankTolerance, type MoeRun, type MoeRunArgs } from '../../session/moe-run.ts';
import type { MoeLayerRun } from '../../session/moe-layer-run.ts';
import { allToAllBytes } from '../timeline/moe-view-model.ts';

/** A step's number against the ranks' run: what the float64 block says, what the run measured, equal or not. */
export interface MoeStepCheck {
  readonly label: string;
  readonly step: readonly number[];
  readonly run: readonly number[];
  readonly pass: boolean;
}

/** One step: a title, what it says, and a table of real values. */
export interface MoeStep {
  readonly id: 'router' | 'permute' | 'dispatch' | 'grouped-gemm' | 'combine' | 'aux' | 'm036';
  readonly title: string;
  readonly text: string;
  readonly head: readonly string[];
  readonly rows: readonly (readonly (string | number)[])[];
  /** The step's counts against the ranks' run (empty without a run). */
  readonly checks: readonly MoeStepCheck[];
}

/** The most tokens a step lists row by row (the rest are counted). */
const listMax = 16;

const p3 = (v: number): string => v.toFixed(3);

/**
 * The steps of a run of the page: inside the layer (runMoeLayer) the block's tokens are the ranks'
 * ln2 outputs, the problem the run's oracle computed in float64 and keeps (MoeLayerRun's `block`);
 * the block run alone (the M036 demonstration) routes moeProblem's tokens (moeSteps).
 */
export function moeRunSteps(a: MoeRunArgs, run: MoeRun | MoeLayerRun): MoeStep[] {
  return 'block' in run ? moeProblemSteps(run.block, a.layout, run) : moeSteps(a, run);
}

/**
 * The steps of `a`'s MoE block run alone (runMoe): its problem is moeProblem's tokens, N/copies
 * blocks of T (under M036 a TP group routes one block t times). See moeProblemSteps.
 */
export function moeSteps(a: MoeRunArgs, run?: MoeRun): MoeStep[] {
  const copies = a.layout.sp ? 1 : a.layout.tp;
  return moeProblemSteps(moeProblem(a.config, a.h, a.tokens, moeWorld(a.layout) / copies, a.seed), a.layout, run);
}

/**
 * The steps of the MoE block on problem `p` (p.ranks blocks of p.T tokens: the block's own
 * tokens, or inside the layer the ranks' ln2 outputs, moeLayerWant's `block`) under `layout`.
 * Token g of the group is token g mod T of block ⌊g/T⌋ (rank ⌊g/T⌋ under SP or at t = 1); expert
 * e lives on EP rank ⌊e/(E/EP)⌋. Assumes a layout the ranks run. With `run` (the ranks' run of
 * the same problem) each step's counts are checked against what the ranks measured: tokens per
 * expert per rank, bytes per EP peer of the dispatch all-to-all, rows per local expert, the aux
 * loss (within moeRankTolerance).
 */
export function moeProblemSteps(p: MoeProblem, layout: MoeLayout, run?: MoeRun): MoeStep[] {
  const { c, h, T } = p;
  // Blocks of T logical tokens: one a rank, or under M036 (no SP at t > 1) one a TP group, every rank of it routing it again.
  const N = p.ranks;
  const holder = layout.sp || layout.tp === 1 ? 'rank' : 'block';
  const E = c.numMoeExperts;
  const k = c.moeRouterTopk;
  const L = E / layout.ep;
  const G = N * T;
  // The group's block (its logits and aux loss: Megatron's global aux over the EP group) and each rank's
  // own routing call (capacity is sized from the rank's T tokens, apply_router_token_dropping).
  const f = moeForward(c, h, G, p.x, p.w);
  const per = Array.from({ length: N }, (_, q) => moeForward(c, h, T, rankRows(p.x, q, T, h), p.w));
  const pick = <A extends Int32Array | Float64Array | Uint8Array>(
    get: (r: (typeof per)[number]['routing']) => A,
    i: number,
  ) => get(per[Math.floor(i / (T * k))]!.routing)[i % (T * k)]!;
  const r = {
    capacity: per[0]!.routing.capacity,
    dropped: per.reduce((s, x) => s + x.routing.dropped, 0),
    tokensPerExpert: Array.from({ length: E }, (_, e) => per.reduce((s, x) => s + x.routing.tokensPerExpert[e]!, 0)),
  };
  const topIdx = (i: number): number => pick((x) => x.topIdx, i);
  const topProb = (i: number): number => pick((x) => x.topProb, i);
  const kept = (i: number): boolean => pick((x) => x.kept, i) === 1;
  const tokenName = (g: number): string => `${g} (${holder} ${Math.floor(g / T)})`;
  const shown = Math.min(G, listMax);
  const more = G > shown ? ` The first ${shown} of ${G} tokens are listed.` : '';

  const router: MoeStep = {
    id: 'router',
    title: '1. Router and top-k',
    text: `logits = x · W_r ([${G}, ${h}] · [${h}, ${E}]${c.routerSkew ? `, plus the skew's bias` : ''}); ${c.moeRouterScoreFunction} scores; each token keeps its ${k} best experts (ties: the lower index).${r.capacity === null ? '' : ` Capacity ${r.capacity} tokens per expert: ${r.dropped} picks dropped (marked ✗).`}${more}`,
    checks: run
      ? run.ranks.map((q) =>
          equal(`rank ${q.rank}: picks per expert`, per[q.tokenBlock]!.routing.tokensPerExpert, q.tokensPerExpert),
        )
      : [],
    head: ['token', ...Array.from({ length: k }, (_, j) => `pick ${j + 1}: expert (weight)`)],
    rows: Array.from({ length: shown }, (_, g) => [
      tokenName(g),
      ...Array.from({ length: k }, (_, j) => {
        const i = g * k + j;
        return `${topIdx(i)} (${p3(topProb(i))})${kept(i) ? '' : ' ✗'}`;
      }),
    ]),
  };

  // Expert e's rows, rank by rank (each rank permutes its own tokens; the group's token g = q·T + t).
  const rowsOf = (e: number): number[] =>
    per.flatMap((x, q) =>
      Array.from(x.perm.rowToken.subarray(x.perm.offsets[e]!, x.perm.offsets[e + 1]!), (tok) => q * T + tok),
    );
  const permute: MoeStep = {
    id: 'permute',
    title: '2. The permutation',
    text: `Each rank sorts its kept picks by expert (stable: token order within an expert), so each expert's rows are contiguous: ${r.tokensPerExpert.reduce((s, v) => s + v, 0)} rows over the ${N} ranks.`,
    checks: [],
    head: ['expert', 'rows', 'tokens (rank by rank, in row order)'],
    rows: Array.from({ length: E }, (_, e) => {
      const ts = rowsOf(e);
      return [e, `${ts.length}`, ts.slice(0, listMax).join(', ') + (ts.length > listMax ? ', …' : '')];
    }),
  };

  // Rows rank q sends to EP rank j: its kept picks of experts [j·L, (j+1)·L).
  const ep = layout.ep;
  const sends = Array.from({ length: N }, () => Array.from({ length: ep }, () => [] as number[]));
  for (let g = 0; g < G; g++)
    for (let j = 0; j < k; j++) {
      const i = g * k + j;
      if (kept(i)) sends[Math.floor(g / T)]![Math.floor(topIdx(i) / L)]!.push(g);
    }
  const dispatch: MoeStep = {
    id: 'dispatch',
    title: '3. Who sends which tokens to whom (the dispatch all-to-all)',
    text: `Each rank sends a token's row to the EP rank that holds its expert (E/EP = ${L} experts a rank), ${h}·4 = ${h * 4} bytes a row; the counts go first (an all-gather of tokens per expert), so every rank knows its uneven splits. A row is one pick: a token whose experts sit on one EP rank goes there once for each (listed twice). The combine all-to-all sends the expert outputs back the same way.`,
    checks: run && layout.dispatcher === 'alltoall' ? dispatchChecks(run, sends, h) : [],
    head: [
      'from rank',
      ...Array.from({ length: ep }, (_, j) => `to EP rank ${j} (experts ${j * L}–${(j + 1) * L - 1})`),
    ],
    rows: sends.map((row, q) => [
      q,
      ...row.map(
        (ts) =>
          `${ts.length} row${ts.length === 1 ? '' : 's'}, ${ts.length * h * 4} B: ${ts.slice(0, 8).join(', ')}${ts.length > 8 ? ', …' : ''}`,
      ),
    ]),
  };

  const fMoe = c.moeFfnHiddenSize;
  const gemm: MoeStep = {
    id: 'grouped-gemm',
    title: '4. The grouped GEMM',
    text: `Each EP rank runs its ${L} experts in one dispatch over uneven row counts: fc1 [rows, ${h}] · [${h}, ${2 * fMoe}], SwiGLU, fc2 [rows, ${fMoe}] · [${fMoe}, ${h}]; 6·rows·h·f FLOPs forward.`,
    // every EDP replica of EP rank j runs its experts on its own tp_ep group's tokens; ETP peers run the same rows
    checks: run
      ? Array.from({ length: ep }, (_, j) => {
          const held = run.ranks.filter((x) => x.coords.ep === j && x.coords.etp === 0);
          return equal(
            `EP rank ${j} (ranks ${held.map((x) => x.rank).join(', ')}): rows per local expert${run.copies > 1 ? ` ÷ ${run.copies} copies` : ''}`,
            r.tokensPerExpert.slice(j * L, (j + 1) * L),
            Array.from({ length: L }, (_, l) => held.reduce((n, x) => n + x.expertRows[l]!, 0) / run.copies),
          );
        })
      : [],
    head: ['EP rank', 'rows per local expert', 'rows', 'forward FLOPs'],
    rows: Array.from({ length: ep }, (_, j) => {
      const rows = Array.from({ length: L }, (_, l) => r.tokensPerExpert[j * L + l]!);
      const n = rows.reduce((s, v) => s + v, 0);
      return [j, rows.join(' · '), n, 6 * n * h * fMoe];
    }),
  };

  // A token of rank 0 with all its picks kept, read from rank 0's block.
  const f0 = per[0]!;
  const r0 = f0.routing;
  const g0 =
    Array.from({ length: T }, (_, g) => g).find((g) => r0.kept.subarray(g * k, (g + 1) * k).every((x) => x === 1)) ?? 0;
  const picks = Array.from({ length: k }, (_, j) => ({
    p: r0.topProb[g0 * k + j]!,
    e: r0.topIdx[g0 * k + j]!,
    row: f0.perm.pickRow[g0 * k + j]!,
  }));
  const cols = Math.min(h, 6);
  const combine: MoeStep = {
    id: 'combine',
    title: '5. The combine',
    text: `Back on its rank, token ${tokenName(g0)}'s output is the weighted sum of its experts' rows: y = ${picks
      .map((x) => `${p3(x.p)}·yp(expert ${x.e})`)
      .join(' + ')}. Its first values:`,
    checks: [],
    head: ['', ...Array.from({ length: cols }, (_, i) => `y[${i}]`)],
    rows: [
      ...picks.map((x) => [
        `${p3(x.p)} · yp (expert ${x.e})`,
        ...Array.from({ length: cols }, (_, i) => (x.row < 0 ? '—' : p3(x.p * f0.yp[x.row * h + i]!))),
      ]),
      ['y', ...Array.from({ length: cols }, (_, i) => p3(f0.y[g0 * h + i]!))],
    ],
  };

  const counts = auxLossCounts(c, f.logits, G);
  const push = auxLoss({ ...c, moeAuxLossCoeff: c.moeAuxLossCoeff || 1 }, f.logits, G).dLogits;
  const aux: MoeStep = {
    id: 'aux',
    title: '6. The aux loss pushes load back',
    text: `aux = coeff · E/(k·T²) · Σ_e c_e · Σ_t S[t, e] = ${f.aux.toPrecision(4)} (coeff ${c.moeAuxLossCoeff}${c.moeAuxLossCoeff ? '' : ': off, the column below is at coeff 1'}). Its gradient on logit[t, e] is K·S[t, e]·(c_e − Σ_e' c_e'·S[t, e']): positive for an expert picked more often than the score-weighted mean, negative for one picked less, so a descent step lowers the busy experts' logits, raises the idle ones', and the next step routes load back.`,
    checks: run
      ? [
          {
            label: `aux loss (float32 ranks against the float64 block, within ${moeRankTolerance})`,
            step: [f.aux],
            run: [run.aux],
            pass: Math.abs(f.aux - run.aux) <= moeRankTolerance,
          },
        ]
      : [],
    head: ['expert', 'c_e (picks before capacity)', 'Σ_t ∂aux/∂logit[t, e]'],
    rows: Array.from({ length: E }, (_, e) => {
      let s = 0;
      for (let t = 0; t < G; t++) s += push[t * E + e]!;
      return [e, counts[e]!, s.toExponential(2)];
    }),
  };

  const t = Math.max(2, layout.tp); // the t the demonstration shows (at t = 1, what t = 2 would do)
  const rows = r.tokensPerExpert.reduce((s, v) => s + v, 0);
  const m036: MoeStep = {
    id: 'm036',
    title: `7. M036: the MoE region with and without SP (t = ${t})`,
    text: `With SP each of the t = ${t} TP ranks routes its own 1/t of the tokens, so every logical token is dispatched once: ${rows} rows, ${rows * h * 4} B in all. Without SP every TP rank holds all of them and routes them again: each token is sent t = ${t} times, ${t * rows} rows, ${t * rows * h * 4} B — the duplicates are pure waste, which is why Megatron refuses MoE with TP > 1 and no SP in training (moe_layer.py:629-632). The rows are the picks above, counted; switch on m036 to measure them on the ranks.`,
    checks:
      run && layout.dispatcher === 'alltoall'
        ? [
            equal(
              `rows dispatched on the ranks (× ${run.copies} cop${run.copies > 1 ? 'ies' : 'y'})`,
              [rows * run.copies],
              [run.ranks.reduce((n, q) => n + q.dispatchBytes, 0) / (h * 4)],
            ),
          ]
        : [],
    head: ['', 'rows dispatched', 'bytes', 'copies of each token'],
    rows: [
      ['with SP', rows, rows * h * 4, 1],
      ['without SP (M036)', t * rows, t * rows * h * 4, t],
    ],
  };
  return [router, permute, dispatch, gemm, combine, aux, m036];
}

/** A check of counts that must be equal. */
function equal(label: string, step: ArrayLike<number>, run: ArrayLike<number>): MoeStepCheck {
  const a = Array.from(step);
  const b = Array.from(run);
  return { label, step: a, run: b, pass: a.length === b.length && a.every((v, i) => v === b[i]) };
}

/**
 * The dispatch step's bytes against the run's dispatch all-to-alls: rank q's rows to EP rank j
 * (sends[q][j], h float32 each) and the bytes its all-to-all sent EP group rank j.
 */
function dispatchChecks(run: MoeRun, sends: readonly (readonly number[][])[], h: number): MoeStepCheck[] {
  const bytes = allToAllBytes(run.trace, 'moe.dispatch', run.ranks.length);
  return run.ranks.map((q) => {
    const peers = run.trace.find((e) => e.rank === q.rank && e.comm?.tensor === 'moe.dispatch')?.comm?.peers;
    return equal(
      `rank ${q.rank}: bytes to each EP rank`,
      sends[q.tokenBlock]!.map((ts) => ts.length * h * 4),
      (peers?.ranks ?? []).map((to) => bytes[q.rank]![to]!),
    );
  });
}
