// The classroom's rank-mesh steps (pure): a pipeline run's boundary tensors, order, bubble and ZB-H1, and the distributed optimizer's shards, from the ranks' outputs.
import { numel } from '../../core/shape.ts';
import { formulaBubble } from '../../parallel/pipeline-bubble.ts';
import { sampleElems, stageGradBuffer, type StageDpOutput } from '../../parallel/pipeline-dp.ts';
import type { AdamHyper } from '../../reference/adam.ts';
import type { PipelineRunResult } from '../../session/pipeline-run.ts';

/** Which step: pipeline (p > 1) or ZeRO-1 (d > 1 with the distributed optimizer). */
export type MeshStepId =
  | 'pp-stages'
  | 'pp-boundary'
  | 'pp-order'
  | 'pp-bubble'
  | 'pp-zb'
  | 'zero-shards'
  | 'zero-reduce-scatter'
  | 'zero-adam'
  | 'zero-all-gather';

/** One number (or row of numbers) a step shows, with what it is. */
export interface MeshFact {
  readonly label: string;
  readonly values: readonly number[];
  /** How to print each value: whole number, share (3 decimals), or a tensor's value (4 significant digits). */
  readonly format: 'count' | 'share' | 'value';
}

export interface MeshStep {
  readonly id: MeshStepId;
  readonly title: string;
  readonly text: string;
  readonly facts: readonly MeshFact[];
}

/** Replica 0's rank of stage `stage`, TP rank 0 (the one a step reads). */
function stageRank(r: PipelineRunResult, stage: number, replica = 0): StageDpOutput {
  const i = r.places.findIndex((c) => c.pp === stage && c.tp === 0 && c.dp === replica);
  const o = r.outputs[i];
  if (!o) throw new Error(`mesh classroom: the run has no rank for stage ${stage}, replica ${replica}, TP rank 0.`);
  return o;
}

/** A stage's passes in the order it ran them, e.g. "F0 F1 B0 F2 B1 …" (chunk c > 0 as F0ᶜ). */
export function passOrder(o: StageDpOutput): string {
  return [...o.spans]
    .sort((a, b) => a.t0 - b.t0)
    .map((s) => `${s.pass}${s.microBatch}${s.chunk ? `/${s.chunk}` : ''}`)
    .join(' ');
}

function pipelineSteps(r: PipelineRunResult): MeshStep[] {
  const { p, m, v, layers, schedule } = r.model;
  const perStage = Array.from({ length: p }, (_, i) => stageRank(r, i));
  const sends = r.trace.filter((e) => e.p2p?.kind === 'send');
  const received = perStage.flatMap((o) => o.boundaries ?? []);
  const warmup = perStage.map((o) => {
    const sorted = [...o.spans].sort((a, b) => a.t0 - b.t0);
    const firstB = sorted.findIndex((s) => s.pass === 'B');
    return firstB < 0 ? sorted.length : firstB;
  });
  const wPasses = perStage.map((o) => o.spans.filter((s) => s.pass === 'W').length);
  const zb = formulaBubble('zb-h1', p, v, m);
  const sim = r.projected.simulated;
  return [
    {
      id: 'pp-stages',
      title: 'Pipeline · the layers cut into stages',
      text: `The ${layers} blocks are cut into ${p} stages (${v > 1 ? `${v} chunks each, ` : ''}Megatron-Core's get_num_layers_to_build); each stage holds its blocks' weights only and runs every micro-batch through them. The batch is cut into m = ${m} micro-batches per replica, run under ${schedule}.`,
      facts: [
        { label: 'stages p', values: [p], format: 'count' },
        { label: 'blocks per stage', values: [layers / p], format: 'count' },
        { label: 'micro-batches m', values: [m], format: 'count' },
        { label: 'ranks', values: [r.places.length], format: 'count' },
      ],
    },
    {
      id: 'pp-boundary',
      title: 'Pipeline · the tensors that cross a stage boundary',
      text: `Between stages only one tensor per micro-batch travels: forward the activation [s, b, h] of the last block ("act.k.j"), backward its gradient ("grad.k.j"), point to point (Megatron's p2p_communication.send_forward / send_backward). Each rank's first step read its micro-batch 0 messages back; below their first ${sampleElems} values as the receiving TP rank 0 of replica 0 got them.`,
      facts: [
        ...received.flatMap((b): MeshFact[] => [
          { label: `${b.tensor} shape`, values: b.shape, format: 'count' },
          { label: `${b.tensor} bytes`, values: [4 * numel(b.shape)], format: 'count' },
          { label: `${b.tensor} values`, values: [...b.values], format: 'value' },
        ]),
        { label: 'p2p sends in the step (every rank)', values: [sends.length], format: 'count' },
        { label: 'p2p bytes in the step', values: [sends.reduce((a, e) => a + e.bytes, 0)], format: 'count' },
      ],
    },
    {
      id: 'pp-order',
      title: `Pipeline · the order each stage ran (${schedule})`,
      text: `Under 1F1B stage i runs p − i − 1 warm-up forwards, then alternates one forward and one backward, then drains the backwards (Megatron-Core's forward_backward_pipelining_without_interleaving; Narayanan et al. 2021, §2.2). Each line is what stage i's TP rank 0 of replica 0 ran in the measured step, in time order.`,
      facts: perStage.flatMap((o, i): MeshFact[] => [
        { label: `stage ${i}: forwards before its first backward`, values: [warmup[i]!], format: 'count' },
        { label: `stage ${i}: ${passOrder(o)}`, values: [o.spans.length], format: 'count' },
      ]),
    },
    {
      id: 'pp-bubble',
      title: 'Pipeline · the bubble, measured',
      text: `The bubble is each stage's idle time inside the step: waiting for its first input, for a neighbour, and after its last pass. Measured on the ranks: 1 − busy/span per stage (the busiest stage's is the step's bubble); beside it the projection's simulation fed with the measured pass times, and the formula with equal stages (p − 1)/(m + p − 1).`,
      facts: [
        { label: 'measured idle share per stage', values: r.measured.idleShare, format: 'share' },
        { label: 'measured bubble (busiest stage)', values: [r.measured.bubbleShare], format: 'share' },
        ...(sim ? [{ label: 'projected (simulation)', values: [sim.bubbleShare], format: 'share' as const }] : []),
        { label: `formula ${r.projected.formula}`, values: [r.projected.formulaShare], format: 'share' },
        { label: 'step span, ms', values: [r.measured.spanMs], format: 'value' },
      ],
    },
    {
      id: 'pp-zb',
      title: 'Pipeline · ZB-H1 fills the bubble with weight gradients',
      text:
        schedule === 'zb-h1'
          ? `ZB-H1 (Qi et al. 2024) splits each backward into B (the input's gradient, which the previous stage waits for) and W (the weights' gradient, which nobody waits for), and runs the W passes where 1F1B idles. Each stage below ran its m W passes; the formula's bubble drops to (p − 1)/(3m + p − 1). On shared cores the measured bubble need not follow (docs/pipeline-view.md).`
          : `ZB-H1 (Qi et al. 2024) splits each backward into B (the input's gradient) and W (the weights' gradient) and runs W where 1F1B idles: its formula gives (p − 1)/(3m + p − 1) against ${schedule}'s shown here. Choose the schedule zb-h1 to run it on the ranks.`,
      facts: [
        { label: 'W passes per stage', values: wPasses, format: 'count' },
        { label: 'formula, this schedule', values: [r.projected.formulaShare], format: 'share' },
        { label: 'formula, ZB-H1', values: [zb], format: 'share' },
      ],
    },
  ];
}

/** The weights rank `o` holds after the step at shard sample `at` of stage buffer's parameter `param`. */
function weightsAt(o: StageDpOutput, d: number, param: string, at: number): number[] {
  if (!o.weights) throw new Error('mesh classroom: the run returned no weights (it ran without Adam).');
  const buf = stageGradBuffer(o.weights, d, 'distributed-optimizer');
  const range = buf.layout.params.find((x) => x.name === param)!;
  const sp = buf.params.get(param)!;
  const w =
    sp.block === undefined ? o.weights.head[sp.name] : o.weights.blocks.find(([l]) => l === sp.block)![1][sp.name];
  const from = at - range.start;
  return Array.from({ length: sampleElems }, (_, i) => w!.data[from + i] ?? 0);
}

function zeroSteps(r: PipelineRunResult, adam: AdamHyper): MeshStep[] {
  const d = r.replicas;
  const ranks = Array.from({ length: d }, (_, q) => stageRank(r, 0, q));
  const zs = ranks.map((o, q) => {
    if (!o.zero) throw new Error(`mesh classroom: replica ${q}'s rank returned no distributed-optimizer record.`);
    return o.zero;
  });
  const z0 = zs[0]!;
  const shard = z0.end - z0.start;
  const q = d - 1; // the last shard: its sample sits in another parameter than shard 0's
  const zq = zs[q]!;
  const at = zq.samples[q]!;
  const mean = Array.from(zq.grad, (_, i) => zs.reduce((a, z) => a + z.local[q]![i]!, 0) / d);
  return [
    {
      id: 'zero-shards',
      title: 'ZeRO-1 · each replica owns 1/d of the optimizer',
      text: `With the distributed optimizer (Megatron's --use-distributed-optimizer; Rajbhandari et al. 2020, ZeRO stage 1) stage 0's flat gradient buffer of TP rank 0 (padded so d divides it) is cut into d = ${d} shards; replica q keeps Adam's moments and main weights for shard q only, instead of for the whole buffer.`,
      facts: [
        { label: 'buffer elements (padded)', values: [z0.numel], format: 'count' },
        { label: 'replicas d', values: [d], format: 'count' },
        { label: 'shard elements per replica', values: zs.map((z) => z.end - z.start), format: 'count' },
        { label: 'shard starts', values: zs.map((z) => z.start), format: 'count' },
        {
          label: 'Adam moment bytes per replica (m and v, fp32), sharded vs whole',
          values: [8 * shard, 8 * z0.numel],
          format: 'count',
        },
      ],
    },
    {
      id: 'zero-reduce-scatter',
      title: 'ZeRO-1 · reduce-scatter: each replica receives the mean of its shard',
      text: `Each replica computed the gradient of its own micro-batches. The reduce-scatter sums the d buffers (each scaled by 1/d) and leaves shard q on replica q only: half the bytes of an all-reduce. Below, ${sampleElems} elements of shard ${q} (parameter ${at.param}, element ${at.at}): every replica's own gradient, their mean, and what replica ${q} received.`,
      facts: [
        ...zs.map(
          (z, k): MeshFact => ({ label: `replica ${k}'s own gradient`, values: [...z.local[q]!], format: 'value' }),
        ),
        { label: 'their mean', values: mean, format: 'value' },
        { label: `received by replica ${q}`, values: [...zq.grad], format: 'value' },
      ],
    },
    {
      id: 'zero-adam',
      title: 'ZeRO-1 · the sharded Adam step',
      text: `Replica ${q} runs Adam on its shard alone (lr ${adam.lr}, β₁ ${adam.beta1}, β₂ ${adam.beta2}, ε ${adam.eps}): m ← β₁m + (1 − β₁)g, v ← β₂v + (1 − β₂)g², w ← w − lr·m̂/(√v̂ + ε). Its moments after the run's last step and its weights before and after it, at the same elements.`,
      facts: [
        { label: 'weight before', values: [...zq.paramBefore], format: 'value' },
        { label: 'gradient g', values: [...zq.grad], format: 'value' },
        { label: 'moment m', values: [...zq.m], format: 'value' },
        { label: 'moment v', values: [...zq.v], format: 'value' },
        { label: 'weight after', values: [...zq.paramAfter], format: 'value' },
      ],
    },
    {
      id: 'zero-all-gather',
      title: 'ZeRO-1 · all-gather: every replica gets the updated weights',
      text: `Each replica updated only its shard; the all-gather (Megatron's start_param_sync) sends each shard to every replica, so all d replicas start the next step with the same weights. Below, the weights each replica holds after the step at replica ${q}'s elements: each equals what replica ${q} computed.`,
      facts: ranks.map(
        (o, k): MeshFact => ({
          label: `replica ${k} holds`,
          values: weightsAt(o, d, at.param, at.at),
          format: 'value',
        }),
      ),
    },
  ];
}

/**
 * The classroom's mesh steps of a run: the pipeline's when p > 1, ZeRO-1's when d > 1 with the
 * distributed optimizer (its records need Adam: `adam` the run's hyper-parameters).
 */
export function meshSteps(r: PipelineRunResult, adam: AdamHyper): MeshStep[] {
  return [
    ...(r.model.p > 1 ? pipelineSteps(r) : []),
    ...(r.replicas > 1 && r.dp === 'distributed-optimizer' ? zeroSteps(r, adam) : []),
  ];
}
