// WebGPU in Node through Dawn (the `webgpu` npm package), for benchmarks where no Chromium runs.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Where Debian's Chromium keeps its Vulkan loader and SwiftShader's Vulkan driver (ICD). */
const chromiumVulkan = {
  dir: '/usr/lib/chromium',
  loader: '/usr/lib/chromium/libvulkan.so.1',
  icd: '/usr/lib/chromium/vk_swiftshader_icd.json',
};
const retried = 'TP_DAWN_VULKAN_FALLBACK';

/** Dawn's WebGPU entry point, with WebGPU's globals (GPUBufferUsage, GPUMapMode, …) installed. */
export async function dawnGpu(): Promise<GPU> {
  const { create, globals } = (await import('webgpu')) as unknown as {
    create: (flags: string[]) => GPU;
    globals: Record<string, unknown>;
  };
  Object.assign(globalThis, globals);
  return create([]);
}

/**
 * Requests Dawn's adapter. Where Dawn finds none (no Vulkan loader on the system, as on a machine
 * without a GPU driver) and Chromium's SwiftShader is installed, this process is run again with
 * Chromium's Vulkan loader and SwiftShader's driver (LD_LIBRARY_PATH must be set before Node starts)
 * and exits with its status; `note` says when that happened. Throws with what to install otherwise.
 */
export async function dawnAdapterOrRerun(): Promise<{ gpu: GPU; note: string }> {
  const gpu = await dawnGpu();
  if (await gpu.requestAdapter()) {
    const note = process.env[retried]
      ? `Vulkan: Chromium's loader and SwiftShader's CPU driver (${chromiumVulkan.icd}), as no system Vulkan driver was found`
      : `Vulkan: the system's loader and drivers${process.env.VK_ICD_FILENAMES ? ` (VK_ICD_FILENAMES=${process.env.VK_ICD_FILENAMES})` : ''}`;
    return { gpu, note };
  }
  if (!process.env[retried] && existsSync(chromiumVulkan.loader) && existsSync(chromiumVulkan.icd)) {
    const env = {
      ...process.env,
      [retried]: '1',
      LD_LIBRARY_PATH: [chromiumVulkan.dir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
      VK_ICD_FILENAMES: process.env.VK_ICD_FILENAMES ?? chromiumVulkan.icd,
    };
    const r = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], { env, stdio: 'inherit' });
    if (r.status === null)
      process.stderr.write(
        `Dawn for Node: the run with SwiftShader's Vulkan driver ended on ${r.signal ?? r.error?.message}; exit status 1.\n`,
      );
    process.exit(r.status ?? 1);
  }
  throw new Error(
    "Dawn for Node found no WebGPU adapter: install a Vulkan loader and driver (Debian: apt-get install libvulkan1 mesa-vulkan-drivers, or the GPU vendor's driver), or Debian's chromium, whose SwiftShader driver is used as a fallback.",
  );
}

/**
 * Imports `entry` (a path from the project root) through Vite's SSR loader in this Node process,
 * so the same sources as the page run, WGSL `?raw` imports included, and returns `await entry[fn](args)`.
 */
export async function runInNode<T>(entry: string, fn: string, args: Record<string, unknown>): Promise<T> {
  // Imported here, not above: rank worker threads load this module for dawnGpu alone.
  const { createServer } = await import('vite');
  const server = await createServer({
    server: { middlewareMode: true, hmr: false, watch: null },
    appType: 'custom',
    logLevel: 'error',
    clearScreen: false,
  });
  try {
    const mod = (await server.ssrLoadModule(entry)) as Record<string, unknown>;
    const f = mod[fn];
    if (typeof f !== 'function') throw new Error(`${entry} exports no function ${fn}`);
    return (await f(args)) as T;
  } finally {
    await server.close();
  }
}
