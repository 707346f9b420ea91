// rope — rotary position embedding, rotate-half pairing, on x [s, b, heads, d] (Q or K).
//   For token t (row of s), pair k ∈ [0, d/2): pos = offset + t, θ = pos · ω_k, ω_k = base^(−2k/d),
//     out[…, k]       = x[…, k] · cos θ − x[…, k + d/2] · sin(±θ)
//     out[…, k + d/2] = x[…, k + d/2] · cos θ + x[…, k] · sin(±θ)
//   sign = +1 rotates by θ (forward); sign = −1 rotates by −θ, the backward (dx from dy).
//   bindings: 0 params (ω_k precomputed in float64, rounded once, d/2 ≤ 256), 1 x (read), 2 out (write)
// One invocation per pair (s·b·heads·d/2 of them); the 2-D grid folds past 65535 workgroups.
// sin/cos come from a quadrant reduction (π/2 split in two parts: exact while θ < 2^16 · π/2, beyond
// that off by about one ulp of θ, like θ itself) and
// Taylor polynomials on [−π/4, π/4] accurate to ~1 ulp: builtin sin/cos are only bounded to 2^−11.

struct Params { pairs: u32, half: u32, bh: u32, offset: u32, sign: f32, _pad0: u32, _pad1: u32, _pad2: u32,
                omega: array<vec4f, 64> }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const TWO_OVER_PI = 0.6366197723675814;
const HALF_PI_HI = 1.5703125;               // 8 significant bits: q · HALF_PI_HI is exact
const HALF_PI_LO = 4.8382679489661923e-4;   // π/2 − HALF_PI_HI

// (sin θ, cos θ).
fn sin_cos(theta: f32) -> vec2f {
  let q = round(theta * TWO_OVER_PI);
  let r = (theta - q * HALF_PI_HI) - q * HALF_PI_LO;   // r ∈ [−π/4, π/4]
  let r2 = r * r;
  let s = r * (1.0 + r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 + r2 * (1.0 / 362880.0)))));
  let c = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0 + r2 * (1.0 / 40320.0 + r2 * (-1.0 / 3628800.0)))));
  switch (i32(q) & 3) {
    case 0: { return vec2f(s, c); }
    case 1: { return vec2f(c, -s); }
    case 2: { return vec2f(-s, -c); }
    default: { return vec2f(-c, s); }
  }
}

@compute @workgroup_size(WG)
fn rope(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.pairs) { return; }
  let k = i % p.half;
  let v = i / p.half;                     // vector index over s · b · heads
  let pos = f32(p.offset + v / p.bh);
  let sc = sin_cos(pos * p.omega[k / 4u][k % 4u]);
  let c = sc.y;
  let s = p.sign * sc.x;
  let lo = v * 2u * p.half + k;
  let hi = lo + p.half;
  let a = x[lo];
  let b = x[hi];
  out[lo] = a * c - b * s;
  out[hi] = b * c + a * s;
}
