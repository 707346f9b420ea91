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
