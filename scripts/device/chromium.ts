import { existsSync } from 'node:fs';

/** Flags that expose WebGPU in headless Chromium (SwiftShader when no GPU) on a closed network. */
export const chromiumArgs = [
  '--no-sandbox',
  '--enable-unsafe-webgpu',
  // Unquantized timestamp queries (Chrome rounds them to 100 µs otherwise): per-kernel times.
  '--enable-webgpu-developer-features',
  '--enable-features=Vulkan',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Path of the Chromium binary; fails loudly with the install command when it is missing. */
export function chromiumPath(): string {
  const path = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(path)) {
    throw new Error(
      `Chromium not found at ${path}. Install it with "apt-get install -y chromium" ` +
        'or point CHROMIUM_PATH at a Chromium/Chrome binary.',
    );
  }
  return path;
}
