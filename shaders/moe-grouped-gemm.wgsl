// moe-grouped-gemm — the experts' GEMMs over uneven row counts in ONE dispatch (Megatron-Core
// TEGroupedMLP's grouped GEMM). Expert e owns rows [off[e], off[e + 1]) of the permuted
// activations (off: float32 integers, [E + 1], off[0] = 0, off[E] = N):
//   grouped_gemm:       C[n, j] = Σ_k A[n, k] · B_e(k, j),  n in expert e's rows
//                       B_e(k, j) = B[e·bsB + k·sBk + j·sBn]   (B [E, K, Nc]: sBk = Nc, sBn = 1;
//                       transposed, B [E, Nc, K]: sBk = 1, sBn = K)
//                       bindings: 0 params, 1 A (read) [N, K], 2 B (read), 3 off (read) [E + 1],
//                                 4 C (read_write) [N, Nc]
//                       grid (⌈Nc / 4RX⌉, ⌈N / 4RY⌉ + E, 1): workgroup y is the τ-th row tile
//                       counted over the experts in order (expert e has ⌈rows_e / 4RY⌉ tiles);
//                       Σ_e ⌈rows_e / 4RY⌉ ≤ ⌈N / 4RY⌉ + E, and workgroups past the last tile exit.
//   grouped_gemm_wgrad: dB[e, k, j] = Σ_{n in e's rows} A[n, k] · G[n, j]
//                       bindings: 0 params, 1 A (read) [N, K], 2 G (read) [N, Nc] (the B binding),
//                                 3 off (read), 4 dB (read_write) [E, K, Nc]   (an expert with no rows gets 0)
//                       grid (⌈Nc / 4RX⌉, ⌈K / 4RY⌉, E)
// Both are gemm.wgsl's gemm_rb4 tiling (docs/gemm.md): 4×4 outputs per invocation in registers
// (rb4_tile of shaders/rb4-tile.wgsl, prepended at module creation), workgroup RX×RY, loads clamped
// to the block, stores masked; no workgroup memory, no subgroups.

struct Params { N: u32, K: u32, Nc: u32, E: u32, sBk: u32, sBn: u32, bsB: u32, _pad0: u32 }

override RX: u32 = 16u;
override RY: u32 = 4u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read> off: array<f32>;
@group(0) @binding(4) var<storage, read_write> C: array<f32>;

fn row0(e: u32) -> u32 { return u32(off[e]); }

@compute @workgroup_size(RX, RY)
fn grouped_gemm(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) l: vec3u) {
  let TM = 4u * RY;
  // The expert of row tile τ and the tile's first row (workgroup-uniform).
  var tau = wg.y;
  var e = 0u;
  for (; e < p.E; e++) {
    let tiles = (row0(e + 1u) - row0(e) + TM - 1u) / TM;
    if (tau < tiles) { break; }
    tau -= tiles;
  }
  if (e >= p.E) { return; }
  let first = row0(e);
  let end = row0(e + 1u);
  let m0 = first + tau * TM + l.y * 4u;
  let n0 = (wg.x * RX + l.x) * 4u;
  if (m0 >= end || n0 >= p.Nc) { return; }
  let lastM = vec4u(end - 1u);
  let lastN = vec4u(p.Nc - 1u);
  let rows = min(vec4u(m0) + vec4u(0u, 1u, 2u, 3u), lastM) * p.K;
  let cols = e * p.bsB + min(vec4u(n0) + vec4u(0u, 1u, 2u, 3u), lastN) * p.sBn;
  let acc = rb4_tile(rows, 1u, cols, p.sBk, p.K);  // acc[r] = row m0 + r, columns n0..n0+3
  for (var r = 0u; r < 4u; r++) {
    if (m0 + r < end) {
      for (var c = 0u; c < 4u; c++) {
        if (n0 + c < p.Nc) { C[(m0 + r) * p.Nc + n0 + c] = acc[r][c]; }
      }
    }
  }
}

@group(0) @binding(4) var<storage, read_write> dB: array<f32>;

@compute @workgroup_size(RX, RY)
fn grouped_gemm_wgrad(@builtin(global_invocation_id) g: vec3u) {
  let e = g.z;
  let k0 = g.y * 4u;
  let n0 = g.x * 4u;
  if (k0 >= p.K || n0 >= p.Nc) { return; }
  let first = row0(e);
  let end = row0(e + 1u);
  let ks = min(vec4u(k0) + vec4u(0u, 1u, 2u, 3u), vec4u(p.K - 1u));
  let js = min(vec4u(n0) + vec4u(0u, 1u, 2u, 3u), vec4u(p.Nc - 1u));
  // Σ over the expert's rows n = first + t: A[n·K + k] · G[n·Nc + j], G read through B.
  let acc = rb4_tile(first * p.K + ks, p.K, first * p.Nc + js, p.Nc, end - first);  // acc[r] = dB row k0 + r
  for (var r = 0u; r < 4u; r++) {
    if (k0 + r < p.K) {
      for (var c = 0u; c < 4u; c++) {
        if (n0 + c < p.Nc) { dB[(e * p.K + k0 + r) * p.Nc + n0 + c] = acc[r][c]; }
      }
    }
  }
}
