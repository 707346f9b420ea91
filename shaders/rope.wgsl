// rope — rotary position embedding, rotate-half pairing, on x [s, b, heads, d] (Q or K).
//   For token t (row of s), pair k ∈ [0, d/2): pos = offset + t, θ = pos · base^(−2k/d),
//     out[…, k]       = x[…, k] · cos θ − x[…, k + d/2] · sin(±θ)
//     out[…, k + d/2] = x[…, k + d/2] · cos θ + x[…, k] · sin(±θ)
//   sign = +1 rotates by θ (forward); sign = −1 rotates by −θ, the backward (dx from dy).
//   bindings: 0 params, 1 x (read), 2 out (write)
// One invocation per pair (s·b·heads·d/2 of them); the 2-D grid folds past 65535 workgroups.
// θ is reduced to [−π, π] before sin/cos, where WGSL bounds their error (2^−11 absolute).

struct Params { pairs: u32, half: u32, bh: u32, offset: u32, log2_base: f32, sign: f32, _pad0: u32, _pad1: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const TWO_PI = 6.283185307179586;

@compute @workgroup_size(WG)
fn rope(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.pairs) { return; }
  let k = i % p.half;
  let v = i / p.half;                     // vector index over s · b · heads
  let pos = f32(p.offset + v / p.bh);
  let inv_freq = exp2(-f32(k) / f32(p.half) * p.log2_base);   // base^(−2k/d)
  let turns = pos * inv_freq / TWO_PI;
  let theta = (turns - round(turns)) * TWO_PI;
  let c = cos(theta);
  let s = p.sign * sin(theta);
  let lo = v * 2u * p.half + k;
  let hi = lo + p.half;
  let a = x[lo];
  let b = x[hi];
  out[lo] = a * c - b * s;
  out[hi] = b * c + a * s;
}
