// Worker that runs the advisor off the page's thread (tens of thousands of layouts; the page stays responsive).
import * as Comlink from 'comlink';
import type { TrainDtype } from '../../hardware/dtype.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import type { ClusterModel } from '../../megatron/parallel-layout.ts';
import { advise, type AdvisorResult } from '../../projection/studies/advisor.ts';
import { defaultSearchSpace } from '../../projection/studies/advisor-space.ts';
import { usesFlashAttention, type KernelOptions } from '../../projection/layer/kernel-options.ts';
import type { SetupExtras } from '../../projection/studies/layout-setup.ts';

/**
 * What the panel asks: the model (with its MoE flags), the system (a catalog, custom or loaded file's, resolved on the page), the dtype, the page's kernel
 * switches (the advisor sets --tp-comm-overlap per candidate), N, the global batch and k.
 */
export interface AdvisorQuery {
  readonly model: ClusterModel;
  readonly system: SystemSpec;
  readonly dtype: TrainDtype;
  readonly kernels: KernelOptions;
  readonly gpus: number;
  readonly globalBatch: number;
  readonly k: number;
  /** The model's multi-latent attention and tied embeddings (layout-setup.ts SetupExtras). */
  readonly extras?: Pick<SetupExtras, 'mla' | 'tiedEmbeddings'>;
}

/** The advisor's answer and its wall time here (ms). */
export interface AdvisorAnswer extends AdvisorResult {
  readonly ms: number;
}

const api = {
  /** Searches the default space; `progress(done, total)` every 2048 candidates and at the end. */
  async search(q: AdvisorQuery, progress: (done: number, total: number) => void): Promise<AdvisorAnswer> {
    const started = performance.now();
    const { system } = q;
    const r = await advise(
      {
        model: q.model,
        machine: { system, dtype: q.dtype, kernels: q.kernels },
        gpus: q.gpus,
        globalBatch: q.globalBatch,
        // One switch, two effects (as the cluster panel and npm run project have it): FlashAttention's time and no s×s activations.
        extras: { ...q.extras, flashAttention: usesFlashAttention(q.kernels, system.gpu.arch) },
      },
      defaultSearchSpace(system, q.model.layers, q.model.moe),
      { k: q.k, onProgress: progress, progressEvery: 2048 },
    );
    return { ...r, ms: performance.now() - started };
  },
};

/** The worker's interface (for Comlink.wrap). */
export type AdvisorWorker = typeof api;

Comlink.expose(api);
