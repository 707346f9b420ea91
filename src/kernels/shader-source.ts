import { parseWgslStruct, wgslLayout, type WgslLayout } from '../core/wgsl-layout.ts';
import type { ShaderSpec } from '../reference/kernel-spec.ts';

/** Every shaders/*.wgsl file's text by file stem (bundled by Vite). */
const files: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(
    import.meta.glob<string>('../../shaders/*.wgsl', { query: '?raw', import: 'default', eager: true }),
  ).map(([path, code]) => [path.replace(/^.*\/([^/]+)\.wgsl$/, '$1'), code]),
);

/** The text of shaders/<stem>.wgsl; throws naming the files there when it does not exist. */
export function shaderFile(stem: string): string {
  const code = files[stem];
  if (code === undefined)
    throw new Error(`shaders/${stem}.wgsl does not exist (shaders/ holds ${Object.keys(files).sort().join(', ')}).`);
  return code;
}

const sources = new Map<ShaderSpec, { code: string; params: WgslLayout }>();

/**
 * A shader module's source (its `include` snippets, then the file) and the layout of its
 * `struct Params`, read from that source by the WGSL alignment rules; built once per shader.
 */
export function shaderSource(spec: ShaderSpec): { readonly code: string; readonly params: WgslLayout } {
  let s = sources.get(spec);
  if (!s) {
    const code = [...(spec.include ?? []), spec.file].map(shaderFile).join('\n');
    const where = `shaders/${spec.file}.wgsl`;
    s = { code, params: uniformLayoutOf(shaderFile(spec.file), 'Params', where) };
    sources.set(spec, s);
  }
  return s;
}

const layouts = new Map<string, WgslLayout>();

/** The layout of `struct <name>` in WGSL source `code` (parsed once per source and struct). */
export function uniformLayoutOf(code: string, name: string, where: string): WgslLayout {
  const key = `${name}\n${code}`;
  let l = layouts.get(key);
  if (!l) {
    l = wgslLayout(parseWgslStruct(code, name, where), where);
    layouts.set(key, l);
  }
  return l;
}
