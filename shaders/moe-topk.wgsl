// moe_topk — the MoE router's top-k of each row, ties to the lower index:
//   a ranks above b ⇔ s[a] > s[b], or s[a] = s[b] and a < b;
//   pick j = the highest-ranked column ranked below pick j − 1 (pick 0: the highest);
//   indices[r, j] = pick j (as float32), values[r, j] = s[r, pick j]; highest first.
//   bindings: 0 params, 1 scores (read) [rows, n], 2 indices (read_write) [rows, k],
//             3 values (read_write) [rows, k]
// One invocation per row, k passes over its n scores (no mask: the rank order excludes earlier
// picks). Scores must be finite. The 2-D grid folds rows past 65535 workgroups.

struct Params { rows: u32, n: u32, k: u32, _pad0: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> scores: array<f32>;
@group(0) @binding(2) var<storage, read_write> indices: array<f32>;
@group(0) @binding(3) var<storage, read_write> values: array<f32>;

fn ranks_above(va: f32, a: u32, vb: f32, b: u32) -> bool {
  return va > vb || (va == vb && a < b);
}

@compute @workgroup_size(WG)
fn moe_topk(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let r = gid.x + gid.y * nwg.x * WG;
  if (r >= p.rows) { return; }
  let base = r * p.n;
  var last_v = 0.0;
  var last = 0u;
  for (var j = 0u; j < p.k; j++) {
    var best = p.n;
    var best_v = 0.0;
    for (var i = 0u; i < p.n; i++) {
      let v = scores[base + i];
      if (j > 0u && !ranks_above(last_v, last, v, i)) { continue; }
      if (best == p.n || ranks_above(v, i, best_v, best)) {
        best = i;
        best_v = v;
      }
    }
    indices[r * p.k + j] = f32(best);
    values[r * p.k + j] = best_v;
    last_v = best_v;
    last = best;
  }
}
