// --moe-layer-freq (Megatron-LM core_v0.19.0 arguments.py:326 moe_freq_type, :3353; the pattern
// built in models/gpt/gpt_layer_specs.py:643-671): which of L layers get the MoE MLP.
//   an integer N ≥ 1: layer i is MoE when i % N = 0 (one MoE layer, then N − 1 dense)
//   a list expression of 0 and 1 (Megatron evaluates it as Python), e.g. "([1]*3+[0]*1)*3":
//     its length must be L (gpt_layer_specs.py:653-657: "Invalid length of moe_layer_pattern")
// Parsed here without eval: expr := term ('+' term)*; term := atom ('*' n)*; atom := '[' 0|1, … ']' | '(' expr ')'.

/** moe_layer_freq: an integer N or a per-layer list of 1 (MoE) and 0 (dense). */
export type MoeLayerFreq = number | readonly (0 | 1)[];

/** Parses `text` as Megatron's --moe-layer-freq takes it, or says what is wrong and what to write. */
export function parseMoeLayerFreq(text: string): { freq: MoeLayerFreq } | { error: string } {
  const t = text.replace(/\s+/g, '');
  const legal =
    'write an integer N ≥ 1 (one MoE layer every N) or a list of 0 and 1 with + and *, e.g. "([1]*3+[0]*1)*3"';
  if (/^\d+$/.test(t)) {
    const n = Number(t);
    return n >= 1 ? { freq: n } : { error: `--moe-layer-freq is "${text}"; ${legal}.` };
  }
  let at = 0;
  const fail = (why: string): never => {
    throw new Error(`--moe-layer-freq is "${text}": ${why} at character ${at + 1}; ${legal}.`);
  };
  const int = (): number => {
    const m = /^\d+/.exec(t.slice(at));
    if (!m) return fail('a number expected');
    at += m[0].length;
    return Number(m[0]);
  };
  const atom = (): (0 | 1)[] => {
    if (t[at] === '(') {
      at++;
      const v = expr();
      if (t[at] !== ')') fail('")" expected');
      at++;
      return v;
    }
    if (t[at] !== '[') return fail('"[" or "(" expected');
    at++;
    const out: (0 | 1)[] = [];
    while (t[at] !== ']') {
      const v = int();
      if (v !== 0 && v !== 1) fail(`${v} is neither 0 (dense) nor 1 (MoE)`);
      out.push(v as 0 | 1);
      if (t[at] === ',') at++;
      else if (t[at] !== ']') fail('"," or "]" expected');
    }
    at++;
    return out;
  };
  const term = (): (0 | 1)[] => {
    let v = atom();
    while (t[at] === '*') {
      at++;
      const n = int();
      if (v.length * n > 4096) fail(`${v.length * n} layers, more than 4096`);
      v = Array.from({ length: n }, () => v).flat();
    }
    return v;
  };
  const expr = (): (0 | 1)[] => {
    let v = term();
    while (t[at] === '+') {
      at++;
      v = [...v, ...term()];
    }
    return v;
  };
  try {
    const v = expr();
    if (at !== t.length) fail('unexpected text');
    if (v.length === 0) fail('an empty pattern');
    if (v.length > 4096) fail(`${v.length} layers, more than 4096`);
    return { freq: v };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/**
 * The per-layer pattern of L layers (true: MoE), as gpt_layer_specs.py:647-657 builds it, or why
 * not: a list whose length is not L (Megatron's assertion there).
 */
export function moeLayerPattern(freq: MoeLayerFreq, L: number): { pattern: boolean[] } | { error: string } {
  if (typeof freq === 'number') return { pattern: Array.from({ length: L }, (_, i) => i % freq === 0) };
  if (freq.length !== L)
    return {
      error: `--moe-layer-freq gives ${freq.length} layers, the model has ${L} (Megatron: "Invalid length of moe_layer_pattern", gpt_layer_specs.py:653-657); give a pattern of ${L} entries or --layers ${freq.length}.`,
    };
  return { pattern: freq.map((v) => v === 1) };
}
