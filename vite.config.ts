import { defineConfig } from 'vite';

/**
 * Cross-origin isolation (COOP + COEP) makes SharedArrayBuffer available to the rank workers.
 * A static host must send the same two headers (see README).
 */
export const crossOriginIsolation = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

export default defineConfig({
  server: { headers: crossOriginIsolation },
  preview: { headers: crossOriginIsolation },
  worker: { format: 'es' },
  build: { target: 'es2022' },
});
