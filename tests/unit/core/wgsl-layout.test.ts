import { describe, expect, test } from 'vitest';
import { packUniform, parseWgslStruct, wgslLayout } from '../../../src/core/wgsl-layout.ts';

// Expected offsets follow the WGSL specification's "Alignment and Size" table and its struct
// layout rule (offset = roundUp(align, previous end); size = roundUp(struct align, end); a
// uniform struct's alignment at least 16).
describe('WGSL uniform layout', () => {
  test('scalars pack at 4-byte steps and the struct rounds up to 16 bytes', () => {
    const l = wgslLayout([
      { name: 'a', type: 'u32' },
      { name: 'b', type: 'i32' },
      { name: 'c', type: 'f32' },
      { name: 'd', type: 'u32' },
      { name: 'e', type: 'u32' },
    ]);
    expect(l.members.map((m) => m.offset)).toEqual([0, 4, 8, 12, 16]);
    expect(l.size).toBe(32);
  });

  test('vec2 aligns to 8, vec3 and vec4 to 16; a scalar after a vec3 fills its fourth word', () => {
    const l = wgslLayout([
      { name: 'a', type: 'f32' },
      { name: 'b', type: 'vec2f' },
      { name: 'c', type: 'vec3<f32>' },
      { name: 'd', type: 'f32' },
      { name: 'e', type: 'vec4u' },
    ]);
    expect(l.members.map((m) => [m.offset, m.size])).toEqual([
      [0, 4],
      [8, 8],
      [16, 12],
      [28, 4],
      [32, 16],
    ]);
    expect(l.size).toBe(48);
  });

  test('array<vec4f, N> has a 16-byte stride and 16-byte alignment', () => {
    const l = wgslLayout([
      { name: 'n', type: 'u32' },
      { name: 'omega', type: 'array<vec4f, 3>' },
    ]);
    expect(l.members[1]).toMatchObject({ offset: 16, size: 48, components: 12, scalar: 'f32' });
    expect(l.size).toBe(64);
  });

  test('an array of scalars (16-byte stride in a uniform buffer) is refused with what to use instead', () => {
    expect(() => wgslLayout([{ name: 'w', type: 'array<f32, 4>' }], 'shaders/x.wgsl')).toThrow(
      /shaders\/x.wgsl, member "w": array<f32, 4> has a 16-byte stride .* use vec4 elements/,
    );
    expect(() => wgslLayout([{ name: 'm', type: 'mat4x4f' }])).toThrow(/type "mat4x4f" is not supported/);
  });
});

describe('parseWgslStruct', () => {
  test('reads members across lines, past comments, attributes and a trailing comma', () => {
    const code = `// struct Params { fake: u32 }
struct Other { z: u32 }
struct Params {
  M: u32, N: u32, // rows, cols
  /* the rotation table */ @align(16) omega: array<vec4f, 64>,
}`;
    expect(parseWgslStruct(code, 'Params')).toEqual([
      { name: 'M', type: 'u32' },
      { name: 'N', type: 'u32' },
      { name: 'omega', type: 'array<vec4f, 64>' },
    ]);
  });

  test('says which file lacks the struct', () => {
    expect(() => parseWgslStruct('fn main() {}', 'Params', 'shaders/y.wgsl')).toThrow(
      /shaders\/y.wgsl: no "struct Params \{ ... \}" found/,
    );
  });
});

describe('packUniform', () => {
  const layout = wgslLayout([
    { name: 'n', type: 'u32' },
    { name: 'r0', type: 'i32' },
    { name: 'scale', type: 'f32' },
    { name: '_pad0', type: 'u32' },
    { name: 'w', type: 'array<vec4f, 2>' },
  ]);

  test('writes each member at its offset as its type, padding and unset array tail zero', () => {
    const words = packUniform(layout, { n: 7, r0: -2, scale: 0.5, w: [1, 2, 3, 4, 5] });
    expect(words.length).toBe(12);
    expect(words[0]).toBe(7);
    expect(new Int32Array(words.buffer)[1]).toBe(-2);
    expect(new Float32Array(words.buffer)[2]).toBe(0.5);
    expect(words[3]).toBe(0);
    expect(Array.from(new Float32Array(words.buffer, 16))).toEqual([1, 2, 3, 4, 5, 0, 0, 0]);
  });

  test('refuses a missing member, an unknown one, too many values and a bad integer, naming each', () => {
    expect(() => packUniform(layout, { n: 1, r0: 0 }, 'softmax')).toThrow(
      /softmax: no value for Params member "scale"/,
    );
    expect(() => packUniform(layout, { n: 1, r0: 0, scale: 1, w: [], cols: 3 }, 'softmax')).toThrow(
      /softmax: value for "cols", which the Params struct does not have/,
    );
    expect(() => packUniform(layout, { n: 1, r0: 0, scale: 1, w: new Array(9).fill(0) })).toThrow(
      /"w" \(array<vec4f, 2>\) holds 8 values, got 9/,
    );
    expect(() => packUniform(layout, { n: -1, r0: 0, scale: 1, w: [] })).toThrow(
      /"n" is u32; -1 is not an integer in \[0, 4294967295\]/,
    );
    expect(() => packUniform(layout, { n: 1, r0: 2.5, scale: 1, w: [] })).toThrow(/"r0" is i32; 2.5 is not an integer/);
  });
});
