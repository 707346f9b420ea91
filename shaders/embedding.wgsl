// embedding — vocab-parallel embedding lookup (Megatron VocabParallelEmbedding) on this rank's table
// [vl, h] holding rows [v0, v0 + vl) of the (padded) vocabulary; ids [tokens] hold global token ids
// as float32 (exact below 2^24); out and dy are [tokens, h]. An id is "local" when it is an integer
// in [v0, v0 + vl); every other id (another rank's, ≥ the padded vocabulary, negative, fractional,
// NaN, ±Inf) is out of range.
//   embedding:     out[t, j] = table[ids[t] − v0, j] if ids[t] is local, else 0   (before all-reduce SUM)
//                  bindings: 0 params, 1 ids (read), 2 table (read), 3 out (write); one invocation per
//                  element of out
//   embedding_dw:  dtable[v, j] = (accumulate ? dtable[v, j] : 0) + Σ_{t : ids[t] = v0 + v} dy[t, j]
//                  bindings: 0 params, 1 ids (read), 2 dy (read), 3 dtable (read_write); one invocation
//                  per element of dtable, summing over tokens in order t = 0, 1, … (no atomics,
//                  deterministic)
// Per-item indices fold past 65535 workgroups as i = gid.x + gid.y · nwg.x · WG.

struct Params { tokens: u32, h: u32, v0: u32, vl: u32, accumulate: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> p: Params;

@group(0) @binding(1) var<storage, read> ids: array<f32>;

// Row of this rank's table for global id t, or −1 when t is not local. Non-negative float32 bit
// patterns order like their values, while negative values (sign bit set), ±Inf and NaN fall outside
// [bits(v0), bits(v0 + vl)); so the range test is exact on the bits even where WGSL assumes no
// NaN/Inf. v0 + vl ≤ 2^24, so both bounds are exact float32. −0 is id 0.
fn local_row(t: f32) -> i32 {
  let raw = bitcast<u32>(t);
  let bits = select(raw, 0u, raw == 0x80000000u);
  if (bits < bitcast<u32>(f32(p.v0)) || bits >= bitcast<u32>(f32(p.v0 + p.vl))) { return -1; }
  let id = u32(t);
  if (f32(id) != t) { return -1; }
  return i32(id - p.v0);
}

@group(0) @binding(2) var<storage, read> table: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn embedding(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.tokens * p.h) { return; }
  let v = local_row(ids[i / p.h]);
  if (v < 0) {
    out[i] = 0.0;
    return;
  }
  out[i] = table[u32(v) * p.h + i % p.h];
}

@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> dtable: array<f32>;

@compute @workgroup_size(WG)
fn embedding_dw(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.vl * p.h) { return; }
  let v = i32(i / p.h);
  let j = i % p.h;
  var s = 0.0;
  for (var t = 0u; t < p.tokens; t++) {
    if (local_row(ids[t]) == v) { s += dy[t * p.h + j]; }
  }
  dtable[i] = select(s, dtable[i] + s, p.accumulate != 0u);
}
