/** Hint shown whenever WebGPU is missing: how a user turns it on. */
export const enableWebGpuHint =
  'Use a recent Chrome or Edge (113+); on Linux start it with --enable-unsafe-webgpu ' +
  '(and --enable-features=Vulkan), or enable chrome://flags/#enable-unsafe-webgpu.';

/** One line naming the adapter, e.g. "google swiftshader (subgroups, timestamp-query)". */
export function adapterName(adapter: GPUAdapter): string {
  const { vendor, architecture, device, description } = adapter.info;
  const name = [vendor, architecture, device, description].filter((s) => s).join(' ');
  return name || 'unnamed adapter';
}

/** Whether an adapter named `name` (adapterName) is SwiftShader, WebGPU run on the CPU: its times say nothing about a GPU. */
export const isCpuAdapter = (name: string): boolean => /swiftshader/i.test(name);

/** Requests an adapter and describes it, or throws a message that says how to enable WebGPU. */
export async function describeAdapter(): Promise<string> {
  if (!('gpu' in navigator) || !navigator.gpu) {
    throw new Error(`This browser exposes no WebGPU (navigator.gpu is missing). ${enableWebGpuHint}`);
  }
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error(`WebGPU is present but no adapter was found. ${enableWebGpuHint}`);
  const features = ['timestamp-query', 'subgroups', 'shader-f16'].filter((f) => adapter.features.has(f));
  return `WebGPU adapter: ${adapterName(adapter)}${features.length ? ` (${features.join(', ')})` : ''}`;
}

/** Optional features the kernels use when an adapter has them. */
export const kernelFeatures: GPUFeatureName[] = ['timestamp-query', 'subgroups'];

/**
 * Requests an adapter and a device for the kernels: the adapter's full storage-binding and
 * buffer limits, plus timestamp queries and subgroups where available. `who` prefixes errors;
 * `gpu` is the WebGPU entry point (the page's navigator.gpu by default; Dawn's in Node).
 */
export async function requestKernelDevice(
  who = 'WebGPU',
  gpu: GPU | undefined = globalThis.navigator?.gpu,
): Promise<{ adapter: GPUAdapter; device: GPUDevice }> {
  if (!gpu) throw new Error(`${who}: navigator.gpu is missing. ${enableWebGpuHint}`);
  const adapter = await gpu.requestAdapter();
  if (!adapter) throw new Error(`${who}: no WebGPU adapter was found. ${enableWebGpuHint}`);
  const device = await adapter.requestDevice({
    requiredFeatures: kernelFeatures.filter((f) => adapter.features.has(f)),
    requiredLimits: {
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
      maxBufferSize: adapter.limits.maxBufferSize,
    },
  });
  return { adapter, device };
}
