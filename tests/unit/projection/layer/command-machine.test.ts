// A job given as its Megatron command is projected with the kernels the command states: a GPT
// command (no --swiglu) as the GPT layer, not the projection's default Llama layer.
import { expect, test } from 'vitest';
import { analyseMeasured } from '../../../../src/kineto/measured-analysis.ts';
import { jobBundle } from '../../../../src/megatron/job-bundle.ts';
import { jobManifestFile, readJobManifest, type JobManifest } from '../../../../src/megatron/job-manifest.ts';
import { parseMegatronCommand } from '../../../../src/megatron/megatron-command.ts';
import { commandKernelOptions } from '../../../../src/projection/layer/command-machine.ts';
import { defaultKernelOptions } from '../../../../src/projection/layer/kernel-options.ts';
import { jobComparisonReport } from '../../../../scripts/trace/trace-job.ts';
import { loadJob, tp2JobSpec } from '../../kineto/kineto-fixtures.ts';

const base =
  'pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --micro-batch-size 1 --bf16';

test('the layer and TP-comm overlap a command states reach its kernel switches; the rest stay at the defaults', () => {
  const of = (extra: string) => commandKernelOptions(parseMegatronCommand(`${base} ${extra}`, 2).flags);
  expect(of('')).toEqual({ ...defaultKernelOptions, layerArch: 'gpt' });
  expect(of('--swiglu')).toEqual({ ...defaultKernelOptions, layerArch: 'llama' });
  // Megatron overlaps TP communication under sequence parallelism only.
  expect(of('--swiglu --tp-comm-overlap').tpCommOverlap).toBe(false);
  expect(of('--swiglu --tp-comm-overlap --sequence-parallel').tpCommOverlap).toBe(true);
});

test('npm run trace projects a GPT manifest as the GPT layer: its step differs from the same job with --swiglu', async () => {
  const llama = readJobManifest(jobBundle(tp2JobSpec).find((f) => f.path === jobManifestFile)!.text);
  expect(llama.command).toContain(' --swiglu');
  const gpt: JobManifest = { ...llama, command: llama.command.replace(' --swiglu', '') };
  const analysis = analyseMeasured(await loadJob('tp2-rank0.json', 'tp2-rank1.json'));
  const projectedStep = async (m: JobManifest) =>
    (await jobComparisonReport(m, analysis)).find((line) => /^step\s/.test(line));
  const [a, b] = [await projectedStep(llama), await projectedStep(gpt)];
  expect(a).toBeDefined();
  // Same measured figure, another projected one: GELU's two MLP GEMMs against SwiGLU's three, FFN 2816 in both.
  expect(b).not.toEqual(a);
  expect(b!.split(/\s+/)[1]).toBe(a!.split(/\s+/)[1]);
});
