// rmsnorm — RMS normalization over the last dim h of x viewed as [rows, h], gain g [h].
//   rmsnorm:          rstd[r] = 1 / sqrt(Σ_j x[r,j]² / h + eps);  y[r,j] = x[r,j] · rstd[r] · g[j]
//                     bindings: 0 params, 1 x (read), 2 g (read), 3 y (write), 4 rstd (write)
//   rmsnorm_backward: dx[r,j] = rstd[r] · dy[r,j] · g[j] − x[r,j] · rstd[r]³ · Σ_k dy[r,k] · g[k] · x[r,k] / h
//                     bindings: 0 params, 1 x (read), 2 g (read), 3 rstd (read), 4 dy (read), 5 dx (write)
//     (one workgroup of WG lanes, a power of two, per row, row = wid.x + wid.y · nwg.x; lanes
//      stride over the row and sum by reduce_sum of shaders/row-reduce.wgsl, prepended at module creation)
//   rmsnorm_dg:       dg[j] = (accumulate ? dg[j] : 0) + Σ_{r ∈ [row_start, row_end)} dy[r,j] · x[r,j] · rstd[r]
//                     bindings: 0 params, 1 x (read), 2 rstd (read), 3 dy (read), 4 dg (read_write)
//     (one invocation per column j; a partial sum over a block of tokens, so blocks and ranks add up)

struct Params { rows: u32, h: u32, eps: f32, row_start: u32, row_end: u32, accumulate: u32, _pad0: u32, _pad1: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> rstd_out: array<f32>;

@compute @workgroup_size(WG)
fn rmsnorm(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.h;
  var ss = 0.0;
  for (var j = lane; j < p.h; j += WG) { ss += x[base + j] * x[base + j]; }
  ss = reduce_sum(lane, ss);
  let r = inverseSqrt(ss / f32(p.h) + p.eps);
  for (var j = lane; j < p.h; j += WG) { y[base + j] = x[base + j] * r * g[j]; }
  if (lane == 0u) { rstd_out[row] = r; }
}

@group(0) @binding(3) var<storage, read> rstd_in: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(WG)
fn rmsnorm_backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                    @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.h;
  var d = 0.0;
  for (var j = lane; j < p.h; j += WG) { d += dy[base + j] * g[j] * x[base + j]; }
  d = reduce_sum(lane, d);
  let r = rstd_in[row];
  let c = r * r * r * d / f32(p.h);
  for (var j = lane; j < p.h; j += WG) { dx[base + j] = r * dy[base + j] * g[j] - x[base + j] * c; }
}

@group(0) @binding(2) var<storage, read> rstd_dg: array<f32>;
@group(0) @binding(3) var<storage, read> dy_dg: array<f32>;
@group(0) @binding(4) var<storage, read_write> dg: array<f32>;

@compute @workgroup_size(WG)
fn rmsnorm_dg(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let j = gid.x + gid.y * nwg.x * WG;
  if (j >= p.h) { return; }
  var s = 0.0;
  for (var r = p.row_start; r < p.row_end; r++) { s += dy_dg[r * p.h + j] * x[r * p.h + j] * rstd_dg[r]; }
  if (p.accumulate != 0u) { s = dg[j] + s; }
  dg[j] = s;
}
