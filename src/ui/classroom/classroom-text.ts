// The words of each classroom step: its title, the paragraph a teacher reads out, and the Megatron
// names at work. The numbers, matrices and checks come from src/parallel/classroom.ts.
import { attentionPicture } from '../../parallel/attention-picture.ts';
import { classroomOverlapConfig, classroomStraggler, type ClassroomStepId } from '../../parallel/classroom.ts';
import type { LayerConfig } from '../../parallel/config.ts';
import { qkvOutWidth } from '../../parallel/qkv-layout.ts';

/** What a step says. */
export interface StepWords {
  readonly title: string;
  readonly text: string;
  /** Megatron classes and functions at work in this step. */
  readonly megatron: readonly string[];
}

/** The words of step `id` for config `c`; `spRan`: whether the SP run exists (s % t = 0). */
export function stepWords(id: ClassroomStepId, c: LayerConfig, spRan: boolean): StepWords {
  const t = c.tp;
  const bytesSH = c.s * c.b * c.h * 4;
  const tNote = t === 1 ? ' At t = 1 there is nothing to communicate.' : '';
  switch (id) {
    case 'split-w1':
      return {
        title: '1 · X replicated, W₁ split by columns',
        text: `Every rank holds the whole input X [s, h] = [${c.s}, ${c.h}]. The gate and up weights W₁ [h, f] (f = ${c.ffn}) are cut by columns: rank r keeps columns [r·f/t, (r+1)·f/t) of each, [h, f/t] = [${c.h}, ${c.ffn / t}]. The input enters the tensor-parallel region through f, whose forward is the identity.${tNote}`,
        megatron: ['ColumnParallelLinear (gate, up)', 'copy_to_tensor_model_parallel_region (f): forward identity'],
      };
    case 'local-y':
      return {
        title: '2 · Each rank computes Yᵢ = X·W₁ᵢ',
        text: `Each rank multiplies the full X by its own columns: [s, h]·[h, f/t] → [s, f/t] = [${c.s}, ${c.ffn / t}], for gate and for up. The result is sharded by columns; no rank has all of Y and none needs it.`,
        megatron: ['ColumnParallelLinear.forward (gather_output=False)'],
      };
    case 'swiglu':
      return {
        title: '3 · SwiGLU is local: no communication',
        text: 'A = silu(Y_gate) ⊙ Y_up is element-wise, and rank r holds the gate and the up column j for the same j: every element it needs is already local. This is why W₁ is split by columns and not by rows — a row split would need an all-reduce before the non-linearity.',
        megatron: ['bias_swiglu_impl (element-wise, per rank)'],
      };
    case 'partial-z':
      return {
        title: '4 · W₂ split by rows: partial Zᵢ = Aᵢ·W₂ᵢ',
        text: `W₂ [f, h] is cut by rows, matching A's columns: rank r keeps rows [r·f/t, (r+1)·f/t), [f/t, h] = [${c.ffn / t}, ${c.h}]. Its product [s, f/t]·[f/t, h] → [s, h] is a full-size contribution: Z = Σᵢ Aᵢ·W₂ᵢ, a sum over the split inner dimension.`,
        megatron: ['RowParallelLinear (input_is_parallel=True)'],
      };
    case 'all-reduce':
      return {
        title: '5 · All-reduce: the partial sums add up to the TP=1 result',
        text: `g sums the t partial Zᵢ on every rank (all-reduce of [s, h] = ${bytesSH} bytes). The sum equals the TP=1 result up to float32 rounding (another summation order).${tNote}`,
        megatron: ['reduce_from_tensor_model_parallel_region (g): forward all-reduce', 'RowParallelLinear.forward'],
      };
    case 'backward':
      return {
        title: '6 · Backward: g → identity, f → all-reduce of dX',
        text: `Backward runs the same boundaries in reverse with the conjugate collectives (Megatron-LM mappings.py: _CopyToModelParallelRegion and _ReduceFromModelParallelRegion; Shoeybi et al. 2019, §3). dZ [s, h] arrives replicated; g's backward is the identity (every rank already holds all of dZ). Each rank computes its partial dXᵢ = dYᵢ·W₁ᵢᵀ [s, f/t]·[f/t, h] → [s, h], and f's backward all-reduces them (${bytesSH} bytes). Forward all-reduce after W₂, backward all-reduce before W₁: one each way.${tNote}`,
        megatron: [
          'reduce_from_tensor_model_parallel_region (g): backward identity',
          'copy_to_tensor_model_parallel_region (f): backward all-reduce',
          'ColumnParallelLinear dgrad',
        ],
      };
    case 'sequence-parallel':
      return {
        title: '7 · With sequence parallelism: [s/t, h] shards',
        text: spRan
          ? `Outside the tensor-parallel region each rank keeps only its s/t = ${c.s / t} tokens, [s/t, h]. Before W₁ an all-gather rebuilds X [s, h]; after W₂ a reduce-scatter both sums the partial Zᵢ and leaves each rank its [s/t, h] rows. Each moves (t−1)/t of [s, h] per rank: the pair costs what one all-reduce does, and the activations between layers are t times smaller. Backward swaps them: all-gather dZ, reduce-scatter dX.`
          : `Sequence parallelism needs s % t = 0 (s = ${c.s}, t = ${t}).`,
        megatron: [
          'LinearWithGradAccumulationAndAsyncCommunication (sequence_parallel, before W₁): forward all-gather · backward reduce-scatter',
          'reduce_scatter_to_sequence_parallel_region: forward reduce-scatter · backward all-gather',
        ],
      };
    case 'attention': {
      const pic = attentionPicture(c);
      const W = qkvOutWidth(c);
      const bytesQkv = c.s * c.b * W * 4;
      const per = t / c.groups;
      const split = pic.gathered
        ? `With ${c.groups} KV groups < t = ${t}, Megatron-Core (since core_v0.16) lays linear_qkv's ${W} output columns out per group — [q heads | k | v] of group 0, then group 1 — and splits them evenly: each rank computes ${W / t} columns, which may cut across heads and across q, k, v. An all-gather along the last dim (${bytesQkv} bytes) gives every rank all ${W}; rank r takes group block ⌊r/${per}⌋ and its own ${c.heads / t} query head${c.heads / t > 1 ? 's' : ''} of it. In backward the gradient of the gathered QKV is reduce-scattered back to the slices, so each weight column has exactly one owner.`
        : `With ${c.groups} KV groups for ${c.heads} heads, each rank computes the columns of groups/t = ${c.groups / t} whole group(s) — their query heads, k and v — and needs nothing from the others.`;
      return {
        title: pic.gathered
          ? '8 · Attention: heads split across ranks, QKV gathered'
          : '8 · Attention: heads split across ranks',
        text: `The same pattern: QKV is a ColumnParallelLinear (linear_qkv), attention per head is local (rank r keeps heads/t = ${c.heads / t} query heads), and the output projection is a RowParallelLinear whose partial sums g all-reduces. ${split}`,
        megatron: [
          'ColumnParallelLinear (linear_qkv)',
          ...(pic.gathered ? ['all_gather_last_dim_from_tensor_parallel_region'] : []),
          'RowParallelLinear (linear_proj)',
          'reduce_from_tensor_model_parallel_region',
        ],
      };
    }
    case 'tp-overlap': {
      const o = classroomOverlapConfig(c);
      const k = o?.tpOverlapChunks ?? t;
      return {
        title: '9 · Chunked overlap: each rank multiplies one chunk while the ring moves the next',
        text: o
          ? `With sequence parallelism the column/row pair waits twice: for the all-gather before W₁ and for the reduce-scatter after W₂. Megatron's --tp-comm-overlap (the "collective matmul" ring exchange) cuts both into chunks along the sequence: here ${k} chunks, one per rank, chunk r being rank r's ${c.s / t}-token shard. For gate/up each rank multiplies the chunk it holds at once, with no wait, while it sends it to the next rank, then each chunk in the order the ring brings it (r − 1, r − 2, …). For down it computes first the partial of the block that travels farthest (r − 1), passes the partials on round the ring, and its own block last. The ranks run the layer this way below (the oracle against TP = 1 still holds: only the order of the work changes); the timeline shows the chunked collectives and GEMMs. On this one machine the ring and the kernels share the same cores, so the overlap is not free (docs/tp-overlap.md).`
          : `Chunked overlap needs t ≥ 2 with sequence parallelism and s divisible by t (s = ${c.s}, t = ${t}).`,
        megatron: [
          '--tp-comm-overlap (Transformer Engine userbuffers)',
          'ColumnParallelLinear (gate, up): chunked all-gather',
          'RowParallelLinear (down): chunked reduce-scatter',
        ],
      };
    }
    case 'straggler': {
      const slow = classroomStraggler(t);
      return {
        title: '10 · A straggler: one slow rank, the others wait inside the all-reduce',
        text: slow
          ? `The ranks run the whole layer again, but rank ${slow.rank} now does ${slow.factor}× the work: each of its kernels is dispatched ${slow.factor} times (as #slow=${slow.rank}:${slow.factor} does). A collective cannot finish before its last rank enters it, so the other ranks reach every all-reduce early and wait there (hatched on the timeline). Their collectives look long, yet they are not slow: the cause is the rank that entered last. The analysis below names it per collective: the last to enter is the straggler.`
          : 'At t = 1 there is no collective and no one to wait for: choose t ≥ 2.',
        megatron: [
          'reduce_from_tensor_model_parallel_region (g)',
          'copy_to_tensor_model_parallel_region (f): backward',
        ],
      };
    }
  }
}
