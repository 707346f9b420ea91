import type { CollectiveOp } from '../../comm/collectives.ts';
import { bytesPerElement } from '../../accounting/parameters.ts';
import { collectiveTimeUs } from '../../hardware/interconnect.ts';
import type { LayerPlan } from '../../parallel/plan-types.ts';
import { isPerStep, tpGroupLink, type Machine } from '../layer/projected-layer.ts';
import type { LayerPricing } from './layer-pricing.ts';

/** finalizeTime per pricing, machine, layer count, gradient bytes and extra all-reduce bytes: exact reuse. */
const finalizeMemo = new WeakMap<LayerPricing, WeakMap<Machine, Map<string, number>>>();
export function finalizeTimeOf(
  pricing: LayerPricing,
  L: number,
  machine: Machine,
  gradBytes: number,
  extraAllReduceBytes = 0,
): number {
  let byMachine = finalizeMemo.get(pricing);
  if (!byMachine) finalizeMemo.set(pricing, (byMachine = new WeakMap()));
  let byL = byMachine.get(machine);
  if (!byL) byMachine.set(machine, (byL = new Map()));
  const key = `${L},${gradBytes},${extraAllReduceBytes}`;
  let ms = byL.get(key);
  if (ms === undefined)
    byL.set(key, (ms = finalizeTime(pricing.full, pricing.block, L, machine, gradBytes, extraAllReduceBytes)));
  return ms;
}

/**
 * The plan's finalize-phase collectives (e.g. the SP norm-gradient all-reduce in
 * finalize_model_grads), coalesced over the L layers into one call per collective kind.
 * `extraAllReduceBytes`: gradients of other TP-replicated parameters Megatron sums over the TP
 * group in the same call (finalize_model_grads.py:416-485 `_allreduce_non_tensor_model_parallel_grads`
 * flattens every `sequence_parallel` or q/k-layernorm gradient into one all-reduce), e.g. MLA's
 * duplicated down projections (mla-step.ts mlaTpGradElements).
 *
 * `gradBytes`: bytes per gradient element on the wire. Megatron all-reduces each parameter's
 * `main_grad` where it has one (finalize_model_grads.py:34-37 `_get_main_grad_attr`, :455-465),
 * and under its DDP every parameter has one: a view into the gradient buffer of
 * grad_dtype = fp32 if grad_reduce_in_fp32 else the parameter's dtype
 * (param_and_grad_buffer.py:917); bf16 turns accumulate_allreduce_grads_in_fp32 on
 * (arguments.py:1181-1193). So the setup's gradient bytes (fsdp-step.ts setupStateBytes: 4 under
 * bf16, 2 under fp16), not the training dtype's.
 */
export function finalizeTime(
  full: LayerPlan,
  block: LayerPlan,
  L: number,
  machine: Machine,
  gradBytes: number,
  extraAllReduceBytes = 0,
): number {
  const payload = new Map<CollectiveOp, { bytes: number; group: number }>();
  const add = (p: LayerPlan, times: number): void => {
    for (const op of p.ops) {
      if (!isPerStep(op) || op.kind !== 'collective' || op.collective.groupSize <= 1) continue;
      const c = op.collective;
      const prev = payload.get(c.op) ?? { bytes: 0, group: c.groupSize };
      const bytes = (c.payloadBytes / bytesPerElement) * gradBytes * times;
      payload.set(c.op, { bytes: prev.bytes + bytes, group: c.groupSize });
    }
  };
  add(full, 1);
  if (block !== full) add(block, L - 1);
  if (extraAllReduceBytes > 0 && block.config.tp > 1) {
    const prev = payload.get('allReduce') ?? { bytes: 0, group: block.config.tp };
    payload.set('allReduce', { bytes: prev.bytes + extraAllReduceBytes, group: prev.group });
  }
  let ms = 0;
  const { system } = machine;
  for (const [op, { bytes, group }] of payload) {
    const link = machine.placed?.tp ?? tpGroupLink(system, group);
    ms += (system.collectiveBaseUs + collectiveTimeUs(op, bytes, group, link)) / 1e3;
  }
  return ms;
}
