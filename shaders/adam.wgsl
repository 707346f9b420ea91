// adam — one Adam step (Kingma & Ba 2015, "Adam: A Method for Stochastic Optimization",
// Algorithm 1), elementwise over n float32 parameters p with gradient g and moments m, v:
//   m[i] ← β1·m[i] + (1 − β1)·g[i]
//   v[i] ← β2·v[i] + (1 − β2)·g[i]²
//   p[i] ← p[i] − lr · (m[i] / c1) / (√(v[i] / c2) + ε),   c1 = 1 − β1^k, c2 = 1 − β2^k at step k ≥ 1
// (the bias corrections c1, c2 come from the host, computed in float64).
//   bindings: 0 params, 1 p (read_write), 2 g (read), 3 m (read_write), 4 v (read_write)
// One invocation per element; the 2-D grid folds n past 65535 workgroups (see src/kernels/grid.ts).

struct Params { n: u32, lr: f32, beta1: f32, beta2: f32, eps: f32, c1: f32, c2: f32, _pad: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read_write> p: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;

@compute @workgroup_size(WG)
fn adam(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= P.n) { return; }
  let gi = g[i];
  let mi = P.beta1 * m[i] + (1.0 - P.beta1) * gi;
  let vi = P.beta2 * v[i] + (1.0 - P.beta2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  p[i] = p[i] - P.lr * (mi / P.c1) / (sqrt(vi / P.c2) + P.eps);
}
