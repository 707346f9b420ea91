import { expect, test } from 'vitest';

test('headless Chromium exposes a WebGPU adapter', async () => {
  expect(navigator.gpu, 'navigator.gpu missing: launch Chromium with --enable-unsafe-webgpu').toBeDefined();
  const adapter = await navigator.gpu.requestAdapter();
  expect(adapter).not.toBeNull();
  console.log(adapter!.info.vendor, adapter!.info.architecture, [...adapter!.features].join(','));
  const device = await adapter!.requestDevice();
  console.log(
    JSON.stringify({
      maxSB: device.limits.maxStorageBufferBindingSize,
      wg: device.limits.maxComputeWorkgroupsPerDimension,
      inv: device.limits.maxComputeInvocationsPerWorkgroup,
      sbpsh: device.limits.maxStorageBuffersPerShaderStage,
    }),
  );
  device.destroy();
});
