// moe-router-loss — the MoE router's z-loss and load-balancing loss, row by row, with their
// logits gradients (Megatron-Core moe_utils.py z_loss_func, switch_load_balancing_loss_func;
// formulas in src/reference/moe/router-loss.ts), logits l [rows, cols = E]:
//   moe_z_loss:   lse = m + log Σ_e exp(l_e − m), m = max_e l_e;
//                 z[r] = scale · lse²;  dl[r, e] = 2 · scale · lse · exp(l_e − m) / Σ exp(l − m)
//                 bindings: 0 params, 1 logits (read), 2 z (read_write) [rows],
//                           3 dl (read_write) [rows, cols]
//   moe_aux_loss: u_e = exp(l_e − m) (sigmoid = 0) or σ(l_e) (sigmoid = 1), D = Σ_e u_e (+ 1e-20
//                 for sigmoid); aux[r] = scale · Σ_e c_e u_e / D; g_e = (scale · c_e − aux[r]) / D;
//                 dl[r, e] = g_e · u_e (softmax) or g_e · u_e (1 − u_e) (sigmoid)
//                 bindings: 0 params, 1 logits (read), 2 counts (read) [cols], 3 aux (read_write)
//                           [rows], 4 dl (read_write) [rows, cols]
// One workgroup of WG lanes (a power of two) per row, row = wid.x + wid.y · nwg.x; lanes stride
// over the row and combine by reduce_max / reduce_sum of shaders/row-reduce.wgsl, prepended at
// module creation with sigmoid_of of shaders/sigmoid.wgsl.

struct Params { rows: u32, cols: u32, scale: f32, sigmoid: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;

@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> z: array<f32>;
@group(0) @binding(3) var<storage, read_write> dz: array<f32>;

@compute @workgroup_size(WG)
fn moe_z_loss(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var m = -3.402823e38;
  for (var j = lane; j < p.cols; j += WG) { m = max(m, logits[base + j]); }
  m = reduce_max(lane, m);
  var s = 0.0;
  for (var j = lane; j < p.cols; j += WG) { s += exp(logits[base + j] - m); }
  s = reduce_sum(lane, s);
  let lse = m + log(s);
  if (lane == 0u) { z[row] = p.scale * lse * lse; }
  let g = 2.0 * p.scale * lse / s;
  for (var j = lane; j < p.cols; j += WG) { dz[base + j] = g * exp(logits[base + j] - m); }
}

@group(0) @binding(1) var<storage, read> logits_a: array<f32>;
@group(0) @binding(2) var<storage, read> counts: array<f32>;
@group(0) @binding(3) var<storage, read_write> aux: array<f32>;
@group(0) @binding(4) var<storage, read_write> daux: array<f32>;

// u_e of the aux loss's scores: exp(l − m) (softmax) or σ(l) (sigmoid).
fn aux_u(l: f32, m: f32) -> f32 {
  return select(exp(l - m), sigmoid_of(l), p.sigmoid != 0u);
}

@compute @workgroup_size(WG)
fn moe_aux_loss(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var m = -3.402823e38;
  for (var j = lane; j < p.cols; j += WG) { m = max(m, logits_a[base + j]); }
  m = reduce_max(lane, m);
  var d = 0.0;
  var cu = 0.0;
  for (var j = lane; j < p.cols; j += WG) {
    let u = aux_u(logits_a[base + j], m);
    d += u;
    cu += counts[j] * u;
  }
  d = reduce_sum(lane, d) + select(0.0, 1e-20, p.sigmoid != 0u);
  cu = reduce_sum(lane, cu);
  let loss = p.scale * cu / d;
  if (lane == 0u) { aux[row] = loss; }
  for (var j = lane; j < p.cols; j += WG) {
    let u = aux_u(logits_a[base + j], m);
    let g = (p.scale * counts[j] - loss) / d;
    daux[base + j] = g * select(u, u * (1.0 - u), p.sigmoid != 0u);
  }
}
