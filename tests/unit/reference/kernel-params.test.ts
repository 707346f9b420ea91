import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { packUniform, parseWgslStruct, wgslLayout } from '../../../src/core/wgsl-layout.ts';
import { kernelSpecs, shaderSpecs } from '../../../src/reference/kernel-registry.ts';
import { gridDims, isGridKernel as isGrid, type KernelSpec } from '../../../src/reference/kernel-spec.ts';

// Ties every kernel descriptor to the WGSL it names: the Params struct (members, types, offsets
// by WGSL's alignment rules), the entry point, the shared snippets and the storage bindings.

const shaderDir = new URL('../../../shaders/', import.meta.url);
const wgsl = (stem: string): string => readFileSync(new URL(`${stem}.wgsl`, shaderDir), 'utf8');
const stems = readdirSync(shaderDir)
  .filter((f) => f.endsWith('.wgsl'))
  .map((f) => f.slice(0, -'.wgsl'.length));

// The GEMM shaders have no descriptor (their tuned variants live in src/kernels/gemm*.ts); gemm.ts packs
// their uniforms by member name into the layout parsed from each variant's WGSL.
const gemmShaders = ['gemm', 'gemm-subgroup', 'gemm-pack'];
const snippets = ['row-reduce', 'rb4-tile', 'sigmoid'];

const specs: readonly KernelSpec[] = Object.values(kernelSpecs);

/** Sample arguments of the grid kernels whose Params take some. */
const sampleArgs: Readonly<Record<string, object>> = {
  rmsnorm: { eps: 1e-5 },
  scale: { factor: 0.5 },
  moeZLoss: { a: 0.1 },
  moeAuxLoss: { b: 0.2, score: 'sigmoid' },
};

describe('kernel descriptors against their WGSL', () => {
  test('every shader is described (or is a GEMM shader or a shared snippet)', () => {
    const described = new Set(shaderSpecs.map((s) => s.file));
    expect(stems.filter((s) => !described.has(s) && !gemmShaders.includes(s) && !snippets.includes(s))).toEqual([]);
  });

  test('each registry key is its descriptor’s name', () => {
    for (const [key, spec] of Object.entries(kernelSpecs)) expect(spec.name).toBe(key);
  });

  test.each(shaderSpecs.map((s) => [s.file, s] as const))(
    'shaders/%s.wgsl: struct Params matches the descriptor member by member, at the same offsets',
    (file, spec) => {
      const declared = parseWgslStruct(wgsl(file), 'Params', `shaders/${file}.wgsl`);
      expect(spec.params).toEqual(declared);
      const layout = wgslLayout(declared);
      expect(wgslLayout(spec.params)).toEqual(layout);
      expect(layout.size % 16).toBe(0);
    },
  );

  test.each(specs.map((s) => [s.name, s] as const))('%s: its entry point is a @compute fn of its shader', (_, spec) => {
    const code = wgsl(spec.shader.file);
    expect(code).toMatch(new RegExp(`@compute[^;{]*\\bfn\\s+${spec.entryPoint}\\s*\\(`));
    for (const s of spec.shader.include ?? []) expect(snippets).toContain(s);
  });

  test.each(specs.map((s) => [s.name, s] as const))(
    '%s: its bindings are storage buffers of that access in the shader',
    (name, spec) => {
      const code = wgsl(spec.shader.file);
      const declared = new Map<number, Set<string>>();
      for (const m of code.matchAll(/@binding\((\d+)\)\s*var<storage,\s*(read|read_write)>/g))
        declared.set(Number(m[1]), (declared.get(Number(m[1])) ?? new Set()).add(m[2]));
      spec.bindings.forEach((b, k) => {
        expect(declared.get(k + 1), `${name} binding ${k + 1} (${b.name})`).toContain(
          b.access === 'read' ? 'read' : 'read_write',
        );
      });
    },
  );

  test.each(specs.filter(isGrid).map((s) => [s.name, s] as const))(
    '%s: its Params values fill every member',
    (name, spec) => {
      const layout = wgslLayout(parseWgslStruct(wgsl(spec.shader.file), 'Params'));
      const values = spec.params(gridDims([3, 5]), (sampleArgs[name] ?? {}) as never);
      expect(() => packUniform(layout, values, name)).not.toThrow();
    },
  );
});

describe('the GEMM shaders (packed by member name in src/kernels/gemm.ts)', () => {
  test('both GEMM shaders lay out the same problem members at the same offsets; only the subgroup one has Kp', () => {
    const portable = wgslLayout(parseWgslStruct(wgsl('gemm'), 'Params'));
    const subgroup = wgslLayout(parseWgslStruct(wgsl('gemm-subgroup'), 'Params'));
    const named = (l: typeof portable) => l.members.filter((m) => !m.name.startsWith('_'));
    expect(named(subgroup).slice(0, -1)).toEqual(named(portable));
    expect(named(subgroup).at(-1)).toMatchObject({ name: 'Kp', type: 'u32', offset: 68 });
    expect(portable.size).toBe(subgroup.size);
  });

  test('gemm-pack.wgsl lays out its PackParams', () => {
    const l = wgslLayout(parseWgslStruct(wgsl('gemm-pack'), 'PackParams'));
    expect(l.members.filter((m) => !m.name.startsWith('_')).map((m) => m.name)).toEqual([
      'R',
      'C',
      'off',
      'sR',
      'sC',
      'bs',
      'RP',
      'CQ',
      'count',
    ]);
  });
});

describe('the shared row reduction', () => {
  test('is written once, in shaders/row-reduce.wgsl, and the row kernels include it', () => {
    const reduction = /fn\s+reduce\w*\s*\(|var<workgroup>\s+red\b/;
    expect(wgsl('row-reduce')).toMatch(reduction);
    expect(stems.filter((s) => s !== 'row-reduce' && reduction.test(wgsl(s)))).toEqual([]);
    for (const s of ['rmsnorm', 'softmax', 'cross-entropy'])
      expect(shaderSpecs.find((spec) => spec.file === s)?.include).toEqual(['row-reduce']);
  });
});

describe('the shared sigmoid', () => {
  test('is written once, in shaders/sigmoid.wgsl, and the shaders that take σ include it', () => {
    const sigmoid = /exp\(-abs\(/;
    expect(wgsl('sigmoid')).toMatch(sigmoid);
    expect(stems.filter((s) => s !== 'sigmoid' && sigmoid.test(wgsl(s)))).toEqual([]);
    for (const s of ['swiglu', 'moe-score', 'moe-router-loss']) {
      expect(wgsl(s)).toMatch(/\bsigmoid_of\(/);
      expect(shaderSpecs.find((spec) => spec.file === s)?.include).toContain('sigmoid');
    }
  });
});

describe('the shared 4×4 register tile', () => {
  test('is written once, in shaders/rb4-tile.wgsl, and the rb4 GEMMs include it', () => {
    const tile = /fn\s+rb4_tile\s*\(|let a = vec4f\(A\[/;
    expect(wgsl('rb4-tile')).toMatch(tile);
    expect(stems.filter((s) => s !== 'rb4-tile' && tile.test(wgsl(s)))).toEqual([]);
    for (const s of ['gemm', 'moe-grouped-gemm']) expect(wgsl(s)).toMatch(/\brb4_tile\(/);
    expect(shaderSpecs.find((spec) => spec.file === 'moe-grouped-gemm')?.include).toEqual(['rb4-tile']);
  });
});
