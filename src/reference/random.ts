/**
 * Seeded PRNG (mulberry32): the same seed gives the same logical weights on every rank and in
 * every run, so TP=t shards and the TP=1 reference hold one model.
 */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** n float32 values uniform in [-scale, scale) from `seed`. */
export function randomArray(n: number, seed: number, scale = 1): Float32Array {
  const next = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (next() * 2 - 1) * scale;
  return out;
}
