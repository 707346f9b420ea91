/** CPU twin of add: out = a + b, elementwise (float64 sum, rounded once to float32). */
export function addRef(a: Float32Array, b: Float32Array): Float32Array {
  if (a.length !== b.length) throw new Error(`addRef: lengths ${a.length} and ${b.length} differ.`);
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] + b[i];
  return out;
}
