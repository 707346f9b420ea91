import type { StepProjection } from '../../src/projection/step/cluster-projection.ts';
import type { MoeTerm } from '../../src/projection/layer/moe-layer.ts';
import type { MoeModuleRecompute } from '../../src/projection/step/moe-step.ts';

/** A projected step's MoE terms as plain data (the JSON's `moe` per row), ms per MoE layer and micro-batch unless said. */
export interface MoeSummary {
  readonly etp: number;
  readonly ep: number;
  readonly edp: number;
  readonly localExperts: number;
  readonly moeLayers: number;
  readonly rowsSent: number;
  readonly rowsPerLocalExpert: number;
  readonly load: number;
  readonly droppedShare: number;
  /** --moe-pad-expert-input-to-capacity: every expert takes its capacity's rows from each rank, whatever the routing. */
  readonly paddedToCapacity: boolean;
  readonly forward: Readonly<Record<string, number>>;
  readonly backward: Readonly<Record<string, number>>;
  readonly expertGemmEfficiency: { readonly fc1: number; readonly fc2: number };
  /** One direction's EP exchange and ETP gather, ms. */
  readonly dispatchMs: number;
  readonly etpMs: number;
  readonly commMs: { readonly forward: number; readonly backward: number };
  readonly exposedCommMs: { readonly forward: number; readonly backward: number };
  readonly denseMlpReplacedMs: { readonly forward: number; readonly backward: number };
  readonly moeMs: { readonly forward: number; readonly backward: number };
  readonly stageExpertParams: readonly number[];
  readonly expertGradSyncMs: number;
  readonly expertParamGatherMs: number;
  readonly expertOptimizerMs: number;
  /** What --recompute-modules moe, moe_act and shared_experts would each drop (bytes) and run again (ms) per MoE layer and micro-batch. */
  readonly recompute: MoeModuleRecompute;
}

const byTerm = (terms: readonly MoeTerm[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const t of terms) out[t.term] = (out[t.term] ?? 0) + t.us / 1e3;
  return out;
};

/** The MoE summary of a step, or undefined without MoE. */
export function moeSummary(p: StepProjection): MoeSummary | undefined {
  const x = p.moe;
  if (!x) return undefined;
  const m = x.model;
  const eff = (term: MoeTerm['term']): number => m.compute.forward.find((t) => t.term === term)?.efficiency ?? 0;
  return {
    etp: m.degrees.etp,
    ep: m.degrees.ep,
    edp: m.degrees.edp,
    localExperts: m.degrees.localExperts,
    moeLayers: m.moeLayers,
    rowsSent: m.compute.rows.sent,
    rowsPerLocalExpert: m.compute.rows.perExpert,
    load: m.compute.rows.load,
    droppedShare: m.compute.rows.droppedShare,
    paddedToCapacity: p.setup.moe?.padToCapacity === true,
    forward: byTerm(m.compute.forward),
    backward: byTerm(m.compute.backward),
    expertGemmEfficiency: { fc1: eff('expert-fc1'), fc2: eff('expert-fc2') },
    dispatchMs: m.dispatch.exchangeUs / 1e3,
    etpMs: m.dispatch.etpUs / 1e3,
    commMs: m.commMs,
    exposedCommMs: m.exposedCommMs,
    denseMlpReplacedMs: { forward: m.denseMlp.forwardMs, backward: m.denseMlp.backwardMs },
    moeMs: { forward: m.forwardMs, backward: m.backwardMs },
    stageExpertParams: x.stageExpertParams,
    expertGradSyncMs: x.tail.gradSyncMs,
    expertParamGatherMs: x.tail.paramGatherMs,
    expertOptimizerMs: x.tail.optimizerMs,
    recompute: m.recompute,
  };
}

/** The MoE summary as text lines under the table. */
export function moeLines(tp: number, s: MoeSummary): string[] {
  const ms = (x: number): string => `${x.toFixed(3)} ms`;
  const terms = (r: Readonly<Record<string, number>>): string =>
    Object.entries(r)
      .filter(([, v]) => v > 0)
      .map(([k, v]) => `${k} ${v.toFixed(3)}`)
      .join(', ');
  return [
    `MoE at t=${tp}: expert mesh ETP ${s.etp} × EP ${s.ep} × EDP ${s.edp}, ${s.localExperts} experts per rank, ${s.moeLayers} MoE layers; ` +
      `${Math.round(s.rowsSent).toLocaleString('en-US')} routed rows sent per rank, ${Math.round(s.rowsPerLocalExpert).toLocaleString('en-US')} per local expert${s.paddedToCapacity ? ' (padded to capacity)' : ''} ` +
      `(load ${s.load.toFixed(2)}× the mean${s.droppedShare > 0 ? `, ${(100 * s.droppedShare).toFixed(1)}% of the busiest expert's tokens dropped` : ''})`,
    `  per MoE layer and micro-batch (ms): forward ${ms(s.moeMs.forward)} in place of the dense MLP's ${ms(s.denseMlpReplacedMs.forward)}; backward ${ms(s.moeMs.backward)} in place of ${ms(s.denseMlpReplacedMs.backward)}`,
    `  forward compute: ${terms(s.forward)}`,
    `  backward compute: ${terms(s.backward)}`,
    `  grouped GEMM rate: fc1 ${(100 * s.expertGemmEfficiency.fc1).toFixed(1)}%, fc2 ${(100 * s.expertGemmEfficiency.fc2).toFixed(1)}% of the dense peak`,
    `  token exchange per direction: EP ${ms(s.dispatchMs)}${s.etp > 1 ? `, ETP gather ${ms(s.etpMs)}` : ''}; per pass ${ms(s.commMs.forward)} (exposed ${ms(s.exposedCommMs.forward)}) forward, ${ms(s.commMs.backward)} (exposed ${ms(s.exposedCommMs.backward)}) backward`,
    `  --recompute-modules per MoE layer and micro-batch: ${(
      [
        ['moe', s.recompute.moe],
        ['moe_act', s.recompute.moeAct],
        ['shared_experts', s.recompute.sharedExperts],
      ] as const
    )
      .map(([n, u]) => `${n} −${(u.droppedBytes / 2 ** 20).toFixed(1)} MiB kept, +${ms(u.redoMs)}`)
      .join('; ')}`,
    `  expert parameters per stage (M): ${s.stageExpertParams.map((p) => (p / 1e6).toFixed(1)).join(', ')}; expert-DP grad sync exposed ${ms(s.expertGradSyncMs)}, param gather ${ms(s.expertParamGatherMs)}, expert optimizer ${ms(s.expertOptimizerMs)}`,
  ];
}
