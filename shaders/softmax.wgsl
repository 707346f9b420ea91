// softmax — over the last dim of x viewed as [rows, cols], rows = batch · n, where the tensor is
// [..., n, cols] and n is the number of score-matrix rows this rank holds (global rows r0 .. r0+n).
//   softmax:          a[j] = scale · x[r, j];  lim = cols, or with the causal mask
//                     lim = clamp(r0 + (r mod n) + 1, 0, cols) (column j is masked when j > global row)
//                     y[r, j] = exp(a[j] − m) / Σ_{k<lim} exp(a[k] − m) for j < lim, m = max_{k<lim} a[k];
//                     y[r, j] = 0 for j ≥ lim
//                     bindings: 0 params, 1 x (read), 2 y (write)
//   softmax_backward: dx[r, j] = scale · y[r, j] · (dy[r, j] − Σ_k dy[r, k] · y[r, k])
//                     bindings: 0 params, 1 y (read), 2 dy (read), 3 dx (write)
// A fully masked row (lim = 0: global row r0 + i < 0) gives y = 0, hence dx = 0.
// One workgroup of WG lanes (a power of two) per row, row = wid.x + wid.y · nwg.x; lanes stride
// over the row and combine max and sums by reduce_max / reduce_sum of shaders/row-reduce.wgsl,
// prepended at module creation.

struct Params { rows: u32, cols: u32, n: u32, causal: u32, r0: i32, scale: f32, _pad0: u32, _pad1: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;

// Number of unmasked leading columns of `row`.
fn row_limit(row: u32) -> u32 {
  if (p.causal == 0u) { return p.cols; }
  let global = p.r0 + i32(row % p.n);
  return u32(clamp(global + 1, 0, i32(p.cols)));
}

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn softmax(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let lim = row_limit(row);
  let base = row * p.cols;
  var m = -3.402823e38;
  for (var j = lane; j < lim; j += WG) { m = max(m, p.scale * x[base + j]); }
  m = reduce_max(lane, m);
  var s = 0.0;
  for (var j = lane; j < lim; j += WG) { s += exp(p.scale * x[base + j] - m); }
  s = reduce_sum(lane, s);
  let inv = select(0.0, 1.0 / s, lim > 0u);
  for (var j = lane; j < p.cols; j += WG) {
    y[base + j] = select(0.0, exp(p.scale * x[base + j] - m) * inv, j < lim);
  }
}

@group(0) @binding(1) var<storage, read> yb: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(WG)
fn softmax_backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                    @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var d = 0.0;
  for (var j = lane; j < p.cols; j += WG) { d += dy[base + j] * yb[base + j]; }
  d = reduce_sum(lane, d);
  for (var j = lane; j < p.cols; j += WG) {
    dx[base + j] = p.scale * yb[base + j] * (dy[base + j] - d);
  }
}
