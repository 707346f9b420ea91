// The memory layout of a WGSL uniform struct, by the WGSL specification's alignment rules
// (W3C WGSL, "Memory Layout" → "Alignment and Size"):
//   f32, i32, u32: align 4, size 4;  vec2<T>: align 8, size 8;  vec3<T>: align 16, size 12;
//   vec4<T>: align 16, size 16;  array<E, N>: align AlignOf(E), stride roundUp(AlignOf(E), SizeOf(E)),
//   and in the uniform address space the stride is rounded up to 16;
//   struct member k: offset = roundUp(AlignOf(member), end of member k − 1);
//   struct: align = max member align, size = roundUp(align, end of the last member); a uniform
//   struct's alignment is rounded up to 16, so its size is a multiple of 16.

/** One member of a WGSL struct as declared: its name and its type as written ("u32", "array<vec4f, 64>"). */
export interface WgslField {
  readonly name: string;
  readonly type: string;
}

/** A struct member placed in memory: byte offset, size and alignment. */
export interface WgslMember extends WgslField {
  readonly offset: number;
  readonly size: number;
  readonly align: number;
  /** The 32-bit scalar every component is stored as. */
  readonly scalar: 'u32' | 'i32' | 'f32';
  /** Number of 32-bit components (1 for a scalar, 4 for vec4f, 4·64 for array<vec4f, 64>). */
  readonly components: number;
}

/** A uniform struct's members in memory and its size in bytes (a multiple of 16). */
export interface WgslLayout {
  readonly members: readonly WgslMember[];
  readonly size: number;
}

const roundUp = (k: number, n: number): number => Math.ceil(n / k) * k;

const scalars = { u32: 'u32', i32: 'i32', f32: 'f32' } as const;
const vecSuffix = { u: 'u32', i: 'i32', f: 'f32' } as const;

interface Placed {
  readonly align: number;
  readonly size: number;
  readonly scalar: 'u32' | 'i32' | 'f32';
  readonly components: number;
}

/** Alignment, size and components of a type in the uniform address space (32-bit scalars only). */
function placed(type: string, where: string): Placed {
  const t = type.replace(/\s+/g, '');
  if (t in scalars) return { align: 4, size: 4, scalar: scalars[t as keyof typeof scalars], components: 1 };
  const vec = /^vec([234])(?:([uif])|<(u32|i32|f32)>)$/.exec(t);
  if (vec) {
    const n = Number(vec[1]);
    const scalar = vec[2] ? vecSuffix[vec[2] as keyof typeof vecSuffix] : (vec[3] as 'u32' | 'i32' | 'f32');
    return { align: n === 2 ? 8 : 16, size: 4 * n, scalar, components: n };
  }
  const arr = /^array<(.+),(\d+)u?>$/.exec(t);
  if (arr) {
    const e = placed(arr[1], where);
    const count = Number(arr[2]);
    const stride = roundUp(16, roundUp(e.align, e.size));
    if (stride !== e.size)
      throw new Error(
        `${where}: array<${arr[1]}, ${count}> has a ${stride}-byte stride in a uniform buffer but ${e.size}-byte elements; use vec4 elements so the values lie contiguous.`,
      );
    return { align: roundUp(16, e.align), size: stride * count, scalar: e.scalar, components: e.components * count };
  }
  throw new Error(
    `${where}: type "${type}" is not supported in a uniform Params struct (use u32, i32, f32, vecN of them, or array<vec4…, N>).`,
  );
}

/** Lays out struct members in declaration order by the WGSL alignment rules of the uniform address space. */
export function wgslLayout(fields: readonly WgslField[], where = 'uniform struct'): WgslLayout {
  let end = 0;
  let align = 16;
  const members = fields.map((f) => {
    const p = placed(f.type, `${where}, member "${f.name}"`);
    const offset = roundUp(p.align, end);
    end = offset + p.size;
    align = Math.max(align, p.align);
    return { ...f, offset, ...p };
  });
  return { members, size: roundUp(align, end) };
}

/** Removes // and /* *\/ comments from WGSL source. */
const stripComments = (code: string): string => code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');

/** The members of `struct <name> { ... }` in WGSL source, in declaration order; throws when it is absent. */
export function parseWgslStruct(code: string, name: string, where = 'WGSL source'): WgslField[] {
  const body = new RegExp(`\\bstruct\\s+${name}\\s*\\{([^}]*)\\}`).exec(stripComments(code));
  if (!body) throw new Error(`${where}: no "struct ${name} { ... }" found.`);
  // Split on commas outside <...> (array<vec4f, 64>).
  const members: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of body[1]) {
    if (ch === '<') depth++;
    if (ch === '>') depth--;
    if (ch === ',' && depth === 0) {
      members.push(current);
      current = '';
    } else current += ch;
  }
  members.push(current);
  return members
    .map((m) => m.trim())
    .filter((m) => m !== '')
    .map((m) => {
      const field = /^(?:@\w+(?:\([^)]*\))?\s*)*([A-Za-z_]\w*)\s*:\s*(.+)$/s.exec(m);
      if (!field) throw new Error(`${where}: cannot read struct ${name} member "${m}".`);
      return { name: field[1], type: field[2].replace(/\s+/g, ' ').trim() };
    });
}

/** Values of a uniform struct's members by name: a number per scalar, numbers (at most its components) per vector or array. */
export type UniformValues = Readonly<Record<string, number | ArrayLike<number>>>;

/** Padding members ("_pad0", "_p1") are zero and take no value. */
export const isPadding = (name: string): boolean => name.startsWith('_');

/**
 * The bytes of a uniform struct, as 32-bit words, from its members' values by name; padding
 * members and the tail are zero. Throws on a missing value, a value for no member, or a
 * non-integer / out-of-range value for an integer member, naming it.
 */
export function packUniform(layout: WgslLayout, values: UniformValues, where = 'uniform'): Uint32Array<ArrayBuffer> {
  const words = new Uint32Array(layout.size / 4);
  const i32 = new Int32Array(words.buffer);
  const f32 = new Float32Array(words.buffer);
  const known = new Set(layout.members.map((m) => m.name));
  for (const key of Object.keys(values))
    if (!known.has(key))
      throw new Error(
        `${where}: value for "${key}", which the Params struct does not have (it has ${[...known].join(', ')}).`,
      );
  for (const m of layout.members) {
    const v = values[m.name];
    if (v === undefined) {
      if (isPadding(m.name)) continue;
      throw new Error(`${where}: no value for Params member "${m.name}" (${m.type}).`);
    }
    const list = typeof v === 'number' ? [v] : Array.from(v);
    if (list.length > m.components)
      throw new Error(
        `${where}: Params member "${m.name}" (${m.type}) holds ${m.components} values, got ${list.length}.`,
      );
    list.forEach((x, k) => {
      const at = m.offset / 4 + k;
      if (m.scalar === 'f32') f32[at] = x;
      else {
        const [lo, hi] = m.scalar === 'u32' ? [0, 2 ** 32 - 1] : [-(2 ** 31), 2 ** 31 - 1];
        if (!Number.isInteger(x) || x < lo || x > hi)
          throw new Error(
            `${where}: Params member "${m.name}" is ${m.scalar}; ${x} is not an integer in [${lo}, ${hi}].`,
          );
        if (m.scalar === 'i32') i32[at] = x;
        else words[at] = x;
      }
    });
  }
  return words;
}
