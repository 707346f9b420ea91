import { numel } from '../core/shape.ts';
import type { LayerConfig } from '../parallel/config.ts';
import { localDims } from '../parallel/dims.ts';
import { bytesPerElement } from './parameters.ts';

/**
 * What the weight-gradient ops of one backward read: the tensors ZB-H1's W needs (Qi et al. 2023,
 * §2: W = the weight gradients), which a backward deferred to its W keeps alive from B to W
 * (parallel/deferred-wgrad.ts frees everything else at B). Float32, per TP rank, with s, b, h, on
 * this rank f = ffn/t FFN columns, nq query heads of d, W/t QKV output columns (W = (heads +
 * 2·groups)·d), vl = V_padded/t vocabulary rows; s' = s/t with SP, s' = s without:
 *
 * | weight gradient      | reads                                                    | elements      |
 * |----------------------|----------------------------------------------------------|---------------|
 * | g1 (RMSNorm gain)    | the block's input x, rstd1, dLN1 (its output's gradient) | 2s'bh + s'b   |
 * | wqkv                 | LN1's output (SP: the re-gathered copy); dQ, dK, dV      | sbh + sb·W/t  |
 * | wo (proj)            | the context; dOut of the attention (SP: all-gathered)    | sb·nq·d + sbh |
 * | g2                   | x2 (the attention residual's output), rstd2, dLN2        | 2s'bh + s'b   |
 * | wfc1 (gate, up)      | LN2's output (SP: the re-gathered copy); dGate, dUp      | sbh + 2sbf    |
 * | wdown                | SwiGLU's output; dOut of the MLP (SP: all-gathered)      | sbf + sbh     |
 * | emb (virtual stage 0)| the token ids; dX of the embedding (SP: all-gathered)    | sb + sbh      |
 * | wout (the last)      | the output layer's input (SP: re-gathered); dLogits      | sbh + sb·vl   |
 *
 * Per block: 4s'bh + 2s'b + 4sbh + sb·(W/t + nq·d) + 3sbf. With dQ, dK, dV one tensor each,
 * sb·(nq + 2·nkv)·d = sb·W/t when groups ≥ t; with groups < t the wgrad reads the gathered
 * gradient's [s, b, W/t] slice (qkv.ts), the same count. The SP shards the backward re-gathers
 * (LN1's and LN2's outputs, the output layer's input) and the gradients a dgrad alone reads (dP,
 * dS, the softmax's, SwiGLU's inputs' and the logits') are freed at B. A linear's W is X^T·dY (Qi et
 * al. 2023, §2), so it holds X and dY; an RMSNorm gain's is Σ_tokens dN ⊙ x·rstd.
 */
export interface WgradInputTerm {
  /** The weight gradient that reads it. */
  readonly weight: 'g1' | 'wqkv' | 'wo' | 'g2' | 'wfc1' | 'wdown' | 'emb' | 'wout';
  readonly tensor: string;
  /** Elements (float32; token ids int32: 4 B each too). */
  readonly elements: number;
  /** 'forward': a saved activation; 'backward': a gradient the backward made. */
  readonly from: 'forward' | 'backward';
}

/** W's inputs for one transformer block on one TP rank (the table above). */
export function blockWgradInputs(c: LayerConfig): WgradInputTerm[] {
  const { s, b, h, sl, f, nq, d, qkvWidth } = localDims(c);
  const t = (
    weight: WgradInputTerm['weight'],
    tensor: string,
    shape: readonly number[],
    from: WgradInputTerm['from'],
  ) => ({
    weight,
    tensor,
    elements: numel(shape),
    from,
  });
  return [
    t('g1', 'block input x', [sl, b, h], 'forward'),
    t('g1', 'rstd1', [sl, b], 'forward'),
    t('g1', 'dLN1', [sl, b, h], 'backward'),
    t('wqkv', 'LN1 output (SP: re-gathered)', [s, b, h], c.sp && c.tp > 1 ? 'backward' : 'forward'),
    t('wqkv', 'dQ, dK, dV', [s, b, qkvWidth], 'backward'),
    t('wo', 'context', [s, b, nq * d], 'forward'),
    t('wo', 'dOut of attention', [s, b, h], 'backward'),
    t('g2', 'x2', [sl, b, h], 'forward'),
    t('g2', 'rstd2', [sl, b], 'forward'),
    t('g2', 'dLN2', [sl, b, h], 'backward'),
    t('wfc1', 'LN2 output (SP: re-gathered)', [s, b, h], c.sp && c.tp > 1 ? 'backward' : 'forward'),
    t('wfc1', 'dGate, dUp', [s, b, 2 * f], 'backward'),
    t('wdown', 'SwiGLU output', [s, b, f], 'forward'),
    t('wdown', 'dOut of the MLP', [s, b, h], 'backward'),
  ];
}

/** W's inputs for the embedding (virtual stage 0) or the output layer (the last), one TP rank. */
export function headWgradInputs(c: LayerConfig, which: 'emb' | 'wout'): WgradInputTerm[] {
  const { s, b, h, vl } = localDims(c);
  const sp = c.sp && c.tp > 1;
  return which === 'emb'
    ? [
        { weight: 'emb', tensor: 'token ids', elements: s * b, from: 'forward' },
        { weight: 'emb', tensor: 'dX of the embedding (SP: all-gathered)', elements: s * b * h, from: 'backward' },
      ]
    : [
        {
          weight: 'wout',
          tensor: 'output input (SP: re-gathered)',
          elements: s * b * h,
          from: sp ? 'backward' : 'forward',
        },
        { weight: 'wout', tensor: 'dLogits', elements: s * b * vl, from: 'backward' },
      ];
}

/** Σ bytes of the terms. */
export const wgradInputBytes = (terms: readonly WgradInputTerm[]): number =>
  terms.reduce((a, x) => a + x.elements * bytesPerElement, 0);
