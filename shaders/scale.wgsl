// scale — x[i] = factor · x[i] in place, over n float32 values: data parallel's gradient scaling
//   before the sum over the DP group (Megatron's grad_data *= gradient_scaling_factor = 1/d).
//   bindings: 0 params, 1 x (read_write)
// One invocation per element; the 2-D grid folds n past 65535 workgroups (see src/kernels/grid.ts).

struct Params { n: u32, factor: f32, _pad0: u32, _pad1: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(WG)
fn scale(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  x[i] = x[i] * p.factor;
}
