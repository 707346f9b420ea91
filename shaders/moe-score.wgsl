// moe-score — the MoE router's sigmoid scores (Megatron-Core moe_utils.py
// topk_routing_with_score_function, score_function "sigmoid"), rows [rows, cols]:
//   moe_sigmoid:        s[r, j] = σ(l[r, j])  (the scores the top-k ranks)
//                       bindings: 0 params, 1 logits (read), 2 scores (read_write)
//   moe_normalize_rows: p[r, j] = v[r, j] / (Σ_i v[r, i] + 1e-20)  (the top-k values' probs, k > 1)
//                       bindings: 0 params, 1 v (read), 2 p (read_write)
// One workgroup of WG lanes (a power of two) per row, row = wid.x + wid.y · nwg.x; lanes stride
// over the row; the sum is reduce_sum of shaders/row-reduce.wgsl, prepended at module creation
// with sigmoid_of of shaders/sigmoid.wgsl.

struct Params { rows: u32, cols: u32, _pad0: u32, _pad1: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;

@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> scores: array<f32>;

@compute @workgroup_size(WG)
fn moe_sigmoid(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  for (var j = lane; j < p.cols; j += WG) { scores[base + j] = sigmoid_of(logits[base + j]); }
}

@group(0) @binding(1) var<storage, read> v: array<f32>;
@group(0) @binding(2) var<storage, read_write> probs: array<f32>;

@compute @workgroup_size(WG)
fn moe_normalize_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                      @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var s = 0.0;
  for (var j = lane; j < p.cols; j += WG) { s += v[base + j]; }
  let d = reduce_sum(lane, s) + 1e-20;
  for (var j = lane; j < p.cols; j += WG) { probs[base + j] = v[base + j] / d; }
}
