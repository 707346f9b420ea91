// copy_cols — copies a column block between two row-major matrices with the same number of rows:
//   dst[r, dc0 + j] = src[r, sc0 + j]   for r < rows, j < n
// (a slice of the last dim, or its inverse: writing a block into a wider matrix).
// Used where Megatron-Core slices the all-gathered fused QKV activations (groups < t) and, in
// backward, places the q/k/v gradients back into the fused layout.
//   bindings: 0 params, 1 src (read) [rows, sw], 2 dst (read_write) [rows, dw]
// One invocation per copied element; the 2-D grid folds past 65535 workgroups.

struct Params { n: u32, cols: u32, sw: u32, sc0: u32, dw: u32, dc0: u32, _pad0: u32, _pad1: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(WG)
fn copy_cols(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
  let r = i / p.cols;
  let j = i % p.cols;
  dst[r * p.dw + p.dc0 + j] = src[r * p.sw + p.sc0 + j];
}
