// add — residual connection and gradient accumulation, elementwise over n float32 values.
//   add:         out[i] = a[i] + b[i]      bindings: 0 params, 1 a (read), 2 b (read), 3 out (write)
//   add_inplace: a[i]  = a[i] + b[i]      bindings: 0 params, 1 a (read_write), 2 b (read)
// One invocation per element; the 2-D grid folds n past 65535 workgroups (see src/kernels/grid.ts).

struct Params { n: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn add(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  out[i] = a[i] + b[i];
}

@group(0) @binding(1) var<storage, read_write> acc: array<f32>;

@compute @workgroup_size(WG)
fn add_inplace(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  acc[i] = acc[i] + b[i];
}
