// gemm — C = op(A)·op(B) (+ bias) (+ C), batched, every operand addressed through strides:
//   C_z[m, n] = Σ_k A_z(m, k) · B_z(k, n) (+ bias[n] if flags & 1) (+ C_z[m, n] if flags & 2)
//   A_z(m, k) = A[offA + z·bsA + m·sAm + k·sAk]      (op(A) = Aᵀ: swap sAm and sAk)
//   B_z(k, n) = B[offB + (z / divB)·bsB + k·sBk + n·sBn]   (divB > 1: GQA heads sharing one KV head)
//   C_z[m, n] = C[offC + z·bsC + m·sCm + n]
// bindings: 0 params (uniform), 1 A (read), 2 B (read), 3 C (read_write), 4 bias [N] (read)
// Entry points (the tuner picks one per adapter and shape class; gemm-subgroup.wgsl adds more):
//   gemm_naive  one invocation per C element; 8×8 workgroup; grid (⌈N/8⌉, ⌈M/8⌉, batch). Baseline.
//   gemm_rb4    4×4 C elements per invocation in registers (rb4_tile of shaders/rb4-tile.wgsl,
//               prepended at module creation), no workgroup memory; workgroup RX×RY;
//               grid (⌈N/4RX⌉, ⌈M/4RY⌉, batch). Loads are clamped to the matrix, stores masked.
//   gemm_tiled  64×64 C tile per 16×16 workgroup staged through workgroup memory in k-slices of
//               16, 4×4 per invocation; grid (⌈N/64⌉, ⌈M/64⌉, batch). For GPUs with fast shared memory.

struct Params {
  M: u32, N: u32, K: u32, batch: u32,
  offA: u32, sAm: u32, sAk: u32, bsA: u32,
  offB: u32, sBk: u32, sBn: u32, bsB: u32,
  divB: u32, offC: u32, sCm: u32, bsC: u32,
  flags: u32, _p0: u32, _p1: u32, _p2: u32,
}

override RX: u32 = 16u;
override RY: u32 = 4u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;

const FLAG_BIAS = 1u;
const FLAG_ACCUMULATE = 2u;

fn baseA(z: u32) -> u32 { return p.offA + z * p.bsA; }
fn baseB(z: u32) -> u32 { return p.offB + (z / p.divB) * p.bsB; }

// Epilogue for one element (bounds already checked): bias, accumulate.
fn store(z: u32, m: u32, n: u32, v: f32) {
  let o = p.offC + z * p.bsC + m * p.sCm + n;
  var s = v;
  if ((p.flags & FLAG_BIAS) != 0u) { s += bias[n]; }
  if ((p.flags & FLAG_ACCUMULATE) != 0u) { s += C[o]; }
  C[o] = s;
}

@compute @workgroup_size(8, 8)
fn gemm_naive(@builtin(global_invocation_id) g: vec3u) {
  let n = g.x;
  let m = g.y;
  let z = g.z;
  if (m >= p.M || n >= p.N) { return; }
  let a = baseA(z) + m * p.sAm;
  let b = baseB(z) + n * p.sBn;
  var s = 0.0;
  for (var k = 0u; k < p.K; k++) { s += A[a + k * p.sAk] * B[b + k * p.sBk]; }
  store(z, m, n, s);
}

@compute @workgroup_size(RX, RY)
fn gemm_rb4(@builtin(global_invocation_id) g: vec3u) {
  let z = g.z;
  let m0 = g.y * 4u;
  let n0 = g.x * 4u;
  if (m0 >= p.M || n0 >= p.N) { return; }
  let lastM = vec4u(p.M - 1u);
  let lastN = vec4u(p.N - 1u);
  let rows = baseA(z) + min(vec4u(m0) + vec4u(0u, 1u, 2u, 3u), lastM) * p.sAm;
  let cols = baseB(z) + min(vec4u(n0) + vec4u(0u, 1u, 2u, 3u), lastN) * p.sBn;
  let acc = rb4_tile(rows, p.sAk, cols, p.sBk, p.K);  // acc[r] = row m0 + r, columns n0..n0+3
  for (var r = 0u; r < 4u; r++) {
    if (m0 + r < p.M) {
      for (var c = 0u; c < 4u; c++) {
        if (n0 + c < p.N) { store(z, m0 + r, n0 + c, acc[r][c]); }
      }
    }
  }
}

const T = 64u;   // C tile edge per workgroup
const TK = 16u;  // k-slice staged per step
var<workgroup> tileA: array<f32, 1024>;  // [TK][T]: tileA[k·T + m]
var<workgroup> tileB: array<f32, 1024>;  // [TK][T]: tileB[k·T + n]

@compute @workgroup_size(16, 16)
fn gemm_tiled(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) l: vec3u,
              @builtin(local_invocation_index) li: u32) {
  let z = wg.z;
  let tm = wg.y * T;
  let tn = wg.x * T;
  let a0 = baseA(z);
  let b0 = baseB(z);
  var acc = mat4x4f();
  for (var k0 = 0u; k0 < p.K; k0 += TK) {
    // 256 invocations stage 1024 values of each tile: 4 each, zero outside the matrix.
    for (var i = 0u; i < 4u; i++) {
      let e = li + i * 256u;
      let kk = e / T;
      let x = e % T;
      let k = k0 + kk;
      var va = 0.0;
      var vb = 0.0;
      if (k < p.K && tm + x < p.M) { va = A[a0 + (tm + x) * p.sAm + k * p.sAk]; }
      if (k < p.K && tn + x < p.N) { vb = B[b0 + k * p.sBk + (tn + x) * p.sBn]; }
      tileA[e] = va;
      tileB[e] = vb;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      let a = vec4f(tileA[kk * T + l.y * 4u], tileA[kk * T + l.y * 4u + 1u], tileA[kk * T + l.y * 4u + 2u], tileA[kk * T + l.y * 4u + 3u]);
      let b = vec4f(tileB[kk * T + l.x * 4u], tileB[kk * T + l.x * 4u + 1u], tileB[kk * T + l.x * 4u + 2u], tileB[kk * T + l.x * 4u + 3u]);
      acc[0] += a.x * b;
      acc[1] += a.y * b;
      acc[2] += a.z * b;
      acc[3] += a.w * b;
    }
    workgroupBarrier();
  }
  for (var r = 0u; r < 4u; r++) {
    let m = tm + l.y * 4u + r;
    for (var c = 0u; c < 4u; c++) {
      let n = tn + l.x * 4u + c;
      if (m < p.M && n < p.N) { store(z, m, n, acc[r][c]); }
    }
  }
}
