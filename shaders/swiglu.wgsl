// swiglu — the SwiGLU activation, elementwise over n float32 values of gate g and up u.
//   swiglu:          y[i] = silu(g[i]) · u[i],  silu(g) = g · σ(g),  σ(g) = 1 / (1 + e^−g)
//                    bindings: 0 params, 1 g (read), 2 u (read), 3 y (write)
//   swiglu_backward: du[i] = dy[i] · silu(g[i])
//                    dg[i] = dy[i] · u[i] · σ(g[i]) · (1 + g[i] · (1 − σ(g[i])))
//                    bindings: 0 params, 1 g (read), 2 u (read), 3 dy (read), 4 dg (write), 5 du (write)
// One invocation per element; the 2-D grid folds n past 65535 workgroups (see src/kernels/grid.ts).
// σ is sigmoid_of of shaders/sigmoid.wgsl, prepended at module creation.

struct Params { n: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;

@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read> u: array<f32>;

@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn swiglu(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  let gi = g[i];
  y[i] = gi * sigmoid_of(gi) * u[i];
}

@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dg: array<f32>;
@group(0) @binding(5) var<storage, read_write> du: array<f32>;

@compute @workgroup_size(WG)
fn swiglu_backward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  let gi = g[i];
  let s = sigmoid_of(gi);
  du[i] = dy[i] * gi * s;
  dg[i] = dy[i] * u[i] * s * (1.0 + gi * (1.0 - s));
}
