// cross-entropy — the pieces of vocab-parallel cross entropy on this rank's logits x [rows, vl]
// (vocabulary columns [v0, v0 + vl) of the global vocabulary); per-row tensors are [rows];
// targets hold global token ids as float32 (exact below 2^24).
//   ce_local_max:    mx[r] = max_j x[r, j]                                     (before all-reduce MAX)
//                    bindings: 0 params, 1 x (read), 2 mx (write)
//   ce_local_sum:    se[r] = Σ_j exp(x[r, j] − m[r]), m the global max          (before all-reduce SUM)
//                    bindings: 0 params, 1 x (read), 2 m (read), 3 se (write)
//     (one workgroup of WG lanes, a power of two, per row, row = wid.x + wid.y · nwg.x; the lanes'
//      partials combined by reduce_max / reduce_sum of shaders/row-reduce.wgsl, prepended at module creation)
//   ce_target_logit: tl[r] = x[r, t[r] − v0] if v0 ≤ t[r] < v0 + vl, else 0    (before all-reduce SUM)
//                    bindings: 0 params, 1 x (read), 2 t (read), 3 tl (write); one invocation per row
//   ce_grad:         dx[r, j] = scale · (exp(x[r, j] − m[r]) / S[r] − [v0 + j = t[r]]), S the global sum
//                    bindings: 0 params, 1 x (read), 2 t (read), 3 m (read), 4 S (read), 5 dx (write);
//                    one invocation per element
//   ce_loss:         loss[r] = log S[r] + m[r] − tl[r], tl the global target logit
//                    bindings: 0 params, 1 m (read), 2 S (read), 3 tl (read), 4 loss (write); one per row
// Per-item indices fold past 65535 workgroups as i = gid.x + gid.y · nwg.x · WG.

struct Params { rows: u32, vl: u32, v0: u32, scale: f32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;

// Local column of global token id t in this rank's range, or −1 outside it.
fn local_column(t: f32) -> i32 {
  let j = i32(round(t)) - i32(p.v0);
  return select(-1, j, j >= 0 && j < i32(p.vl));
}

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> mx: array<f32>;

@compute @workgroup_size(WG)
fn ce_local_max(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  var m = -3.402823e38;
  for (var j = lane; j < p.vl; j += WG) { m = max(m, x[row * p.vl + j]); }
  m = reduce_max(lane, m);
  if (lane == 0u) { mx[row] = m; }
}

@group(0) @binding(2) var<storage, read> m_in: array<f32>;
@group(0) @binding(3) var<storage, read_write> se: array<f32>;

@compute @workgroup_size(WG)
fn ce_local_sum(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let m = m_in[row];
  var s = 0.0;
  for (var j = lane; j < p.vl; j += WG) { s += exp(x[row * p.vl + j] - m); }
  s = reduce_sum(lane, s);
  if (lane == 0u) { se[row] = s; }
}

@group(0) @binding(2) var<storage, read> t: array<f32>;
@group(0) @binding(3) var<storage, read_write> tl: array<f32>;

@compute @workgroup_size(WG)
fn ce_target_logit(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= p.rows) { return; }
  let j = local_column(t[row]);
  tl[row] = select(0.0, x[row * p.vl + u32(max(j, 0))], j >= 0);
}

@group(0) @binding(3) var<storage, read> m_g: array<f32>;
@group(0) @binding(4) var<storage, read> s_g: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(WG)
fn ce_grad(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.rows * p.vl) { return; }
  let row = i / p.vl;
  let col = i32(i % p.vl);
  let hit = select(0.0, 1.0, local_column(t[row]) == col);
  dx[i] = p.scale * (exp(x[i] - m_g[row]) / s_g[row] - hit);
}

@group(0) @binding(1) var<storage, read> m_l: array<f32>;
@group(0) @binding(2) var<storage, read> s_l: array<f32>;
@group(0) @binding(3) var<storage, read> tl_l: array<f32>;
@group(0) @binding(4) var<storage, read_write> loss: array<f32>;

@compute @workgroup_size(WG)
fn ce_loss(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= p.rows) { return; }
  loss[row] = log(s_l[row]) + m_l[row] - tl_l[row];
}
