// moe-permute — token permutation of the MoE block (Megatron-Core moe_utils.py permute/unpermute).
// Row indices are float32 integers; pickRow holds −1 for a dropped pick.
//   moe_permute:           xp[n, c] = scale[n] · x[rowToken[n], c]
//                          bindings: 0 params, 1 x (read) [T, h], 2 rowToken (read) [N],
//                                    3 scale (read) [N], 4 xp (read_write) [N, h]
//                          one invocation per element of xp (rows = N)
//   moe_unpermute:         y[t, c] = Σ_{j < k, pickRow[t, j] ≥ 0} w[t, j] · yp[pickRow[t, j], c], j ascending
//                          bindings: 0 params, 1 yp (read) [N, h], 2 pickRow (read) [T, k],
//                                    3 w (read) [T, k], 4 y (read_write) [T, h]
//                          one invocation per element of y (rows = T)
//   moe_combine_prob_grad: dw[t, j] = Σ_c dy[t, c] · yp[pickRow[t, j], c] (c ascending), 0 when dropped
//                          bindings: 0 params, 1 dy (read) [T, h], 2 yp (read) [N, h],
//                                    3 pickRow (read) [T, k], 4 dw (read_write) [T, k]
//                          one invocation per pick (rows = T)
// The 2-D grid folds past 65535 workgroups.

struct Params { rows: u32, h: u32, k: u32, _pad0: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> row_token: array<f32>;
@group(0) @binding(3) var<storage, read> scale: array<f32>;
@group(0) @binding(4) var<storage, read_write> xp: array<f32>;

@compute @workgroup_size(WG)
fn moe_permute(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.rows * p.h) { return; }
  let n = i / p.h;
  let c = i % p.h;
  xp[i] = scale[n] * x[u32(row_token[n]) * p.h + c];
}

@group(0) @binding(1) var<storage, read> yp: array<f32>;
@group(0) @binding(2) var<storage, read> pick_row: array<f32>;
@group(0) @binding(3) var<storage, read> w: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn moe_unpermute(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.rows * p.h) { return; }
  let t = i / p.h;
  let c = i % p.h;
  var acc = 0.0;
  for (var j = 0u; j < p.k; j++) {
    let n = i32(pick_row[t * p.k + j]);
    if (n >= 0) { acc += w[t * p.k + j] * yp[u32(n) * p.h + c]; }
  }
  y[i] = acc;
}

@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> yp_saved: array<f32>;
@group(0) @binding(3) var<storage, read> pick_row_g: array<f32>;
@group(0) @binding(4) var<storage, read_write> dw: array<f32>;

@compute @workgroup_size(WG)
fn moe_combine_prob_grad(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.rows * p.k) { return; }
  let t = i / p.k;
  let n = i32(pick_row_g[i]);
  var acc = 0.0;
  if (n >= 0) {
    for (var c = 0u; c < p.h; c++) { acc += dy[t * p.h + c] * yp_saved[u32(n) * p.h + c]; }
  }
  dw[i] = acc;
}
