import { numel } from '../core/shape.ts';
import { dtypeBytes, type TrainDtype } from '../hardware/dtype.ts';
import { collectiveTimeUs, type Interconnect } from '../hardware/interconnect.ts';
import { gemmTime, memoryBoundUs, type GemmTime } from '../hardware/kernel-time.ts';
import { bytesPerElement } from '../accounting/parameters.ts';
import { groupLink, type SystemSpec } from '../hardware/systems.ts';
import type { LayerPlan, PlannedOp } from '../parallel/plan-types.ts';
import { scheduleStep, type StepDurations, type Timeline } from '../schedule/schedule.ts';

/** A real machine to project onto: a system of the catalog (or custom) and the training dtype. */
export interface Machine {
  readonly system: SystemSpec;
  readonly dtype: TrainDtype;
}

/**
 * Bytes a memory-bound kernel moves: every input read once and the output written once, at the
 * training dtype. The embedding lookup reads only the s·b rows it gathers (plus the ids), not
 * its whole [V/t, h] table.
 */
export function kernelBytes(op: PlannedOp, dtype: TrainDtype): number {
  const b = dtypeBytes[dtype];
  const out = numel(op.outShape);
  if (op.kind === 'kernel' && op.kernel === 'embedding') return numel(op.inShapes[0] ?? []) * 4 + 2 * out * b;
  return (op.inShapes.reduce((a, s) => a + numel(s), 0) + out) * b;
}

/** True for ops a training step runs once, after every micro-batch (a plan's finalize phase). */
export const isPerStep = (op: PlannedOp): boolean => op.phase !== 'forward' && op.phase !== 'backward';

/**
 * The link a TP group of `t` adjacent ranks uses on `system`: it holds min(t, GPUs per node)
 * ranks per node, so it stays on the intra-node link while t ≤ GPUs per node and crosses the
 * network beyond.
 */
export const tpGroupLink = (system: SystemSpec, t: number): Interconnect =>
  groupLink(system, t, Math.min(t, system.gpusPerNode));

/** The timeline caption's communication source for a run at degree `t` projected on `machine`. */
export function projectedCommSource(machine: Machine, t: number): string {
  const { system } = machine;
  const link = tpGroupLink(system, t);
  const where =
    link === system.intra
      ? link.label
      : `${link.label}: the TP group of ${t} spans ${Math.ceil(t / system.gpusPerNode)} nodes of ${system.gpusPerNode} GPUs`;
  return `projected on ${where} (alpha-beta ring, ${system.collectiveBaseUs} µs NCCL base latency per call), payloads in ${machine.dtype}`;
}

/**
 * Projected time (µs) of one collective of the plan on `system`: the base cost of an NCCL call
 * plus the ring model on the link its group uses (TP ranks adjacent: a group of t holds
 * min(t, GPUs per node) ranks per node). The plan's payloads are float32; they are re-priced at
 * the training dtype.
 */
export function projectedCollectiveUs(op: PlannedOp, machine: Machine): number {
  if (op.kind !== 'collective' || op.collective.groupSize <= 1) return 0;
  const c = op.collective;
  const { system } = machine;
  const link = tpGroupLink(system, c.groupSize);
  const payload = (c.payloadBytes / bytesPerElement) * dtypeBytes[machine.dtype];
  return system.collectiveBaseUs + collectiveTimeUs(c.op, payload, c.groupSize, link);
}

/** Per-op projection of a plan: durations for scheduleStep and each GEMM's model output. */
export interface ProjectedOps extends StepDurations {
  /** [opIndex]: the GEMM model's answer for GEMM ops. */
  readonly gemm: readonly (GemmTime | undefined)[];
}

/**
 * Every op's projected time on `machine` (ms), the same on every rank (the ranks run the same
 * shapes). Ops of a finalize phase get 0 here: the step projection adds them once per step.
 */
export function projectOps(plan: LayerPlan, machine: Machine): ProjectedOps {
  const gpu = machine.system.gpu;
  const gemm: (GemmTime | undefined)[] = [];
  const compute: number[] = [];
  const comm: number[] = [];
  for (const op of plan.ops) {
    const g = op.kind === 'gemm' ? gemmTime(op.gemm, gpu, machine.dtype) : undefined;
    gemm.push(g);
    const perStep = isPerStep(op);
    compute.push(
      op.kind === 'collective' || perStep ? 0 : (g ? g.us : memoryBoundUs(kernelBytes(op, machine.dtype), gpu)) / 1e3,
    );
    comm.push(op.kind === 'collective' && !perStep ? projectedCollectiveUs(op, machine) / 1e3 : 0);
  }
  return { gemm, computeMs: plan.ranks.map(() => compute), commMs: plan.ranks.map(() => comm) };
}

/** One micro-batch of the plan scheduled on `machine` (projected kernels and links). */
export function projectLayer(plan: LayerPlan, machine: Machine, overlap: boolean): Timeline {
  return scheduleStep(plan, projectOps(plan, machine), { overlap });
}
