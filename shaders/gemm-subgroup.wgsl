// gemm-subgroup — register-blocked GEMM whose 4 quad lanes share the rows of A.
// Needs the `subgroups` feature (hence a module of its own: `enable subgroups` must not reach
// adapters without it). Same Params, bindings and semantics as gemm.wgsl:
//   C_z[m, n] = Σ_k A_z(m, k) · B_z(k, n) (+ bias[n]) (+ C_z[m, n])
//   A_z(m, k) = A[offA + z·bsA + m·sAm + k·sAk]      B_z(k, n) = B[offB + (z / divB)·bsB + k·sBk + n·sBn]
//   C_z[m, n] = C[offC + z·bsC + m·sCm + n]
// bindings: 0 params (uniform), 1 A (read), 2 B (read), 3 C (read_write), 4 bias [N] (read)
// Each lane of a quad owns an 8-column strip; the quad owns RQ·8 rows (RQ = 1 or 2 blocks of 8).
// Per 4 values of k a lane loads 2·RQ values of A per row block it helps with (its share of the
// quad's rows) and 32 of B, and quadBroadcast hands it the quad's other rows: on SIMD-on-CPU
// adapters (SwiftShader) every load is a per-lane gather, so sharing A cuts loads per FMA.
// Workgroup: 64 lanes = 16 quads, QX along N × (16 / QX) along M.
// Tile: (16 / QX)·8·RQ rows × QX·32 columns. Grid: (⌈N / tileN⌉, ⌈M / tileM⌉, batch).
enable subgroups;

struct Params {
  M: u32, N: u32, K: u32, batch: u32,
  offA: u32, sAm: u32, sAk: u32, bsA: u32,
  offB: u32, sBk: u32, sBn: u32, bsB: u32,
  divB: u32, offC: u32, sCm: u32, bsC: u32,
  flags: u32, _p0: u32, _p1: u32, _p2: u32,
}

override QX: u32 = 2u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;

const FLAG_BIAS = 1u;
const FLAG_ACCUMULATE = 2u;

// 8 rows × 8 columns of accumulators: lo holds columns 0..3, hi columns 4..7.
struct Acc8 { lo: array<vec4f, 8>, hi: array<vec4f, 8> }

// acc[r] += Bk · x_r for the 8 rows of one block; ma/mb are this lane's share (rows lane, lane+4)
// of 4 consecutive k, broadcast across the quad; bl/bh are B's 4 k-rows × 8 columns.
fn step8(acc: ptr<function, Acc8>, ma: vec4f, mb: vec4f, bl: mat4x4f, bh: mat4x4f) {
  var x = quadBroadcast(ma, 0u); (*acc).lo[0] += bl * x; (*acc).hi[0] += bh * x;
  x = quadBroadcast(ma, 1u); (*acc).lo[1] += bl * x; (*acc).hi[1] += bh * x;
  x = quadBroadcast(ma, 2u); (*acc).lo[2] += bl * x; (*acc).hi[2] += bh * x;
  x = quadBroadcast(ma, 3u); (*acc).lo[3] += bl * x; (*acc).hi[3] += bh * x;
  x = quadBroadcast(mb, 0u); (*acc).lo[4] += bl * x; (*acc).hi[4] += bh * x;
  x = quadBroadcast(mb, 1u); (*acc).lo[5] += bl * x; (*acc).hi[5] += bh * x;
  x = quadBroadcast(mb, 2u); (*acc).lo[6] += bl * x; (*acc).hi[6] += bh * x;
  x = quadBroadcast(mb, 3u); (*acc).lo[7] += bl * x; (*acc).hi[7] += bh * x;
}

// Four consecutive k of A row `row` (an offset already including m·sAm), from k.
fn loadA4(row: u32, k: u32) -> vec4f {
  let i = row + k * p.sAk;
  return vec4f(A[i], A[i + p.sAk], A[i + 2u * p.sAk], A[i + 3u * p.sAk]);
}

// B at k-row offset kb for the 4 column offsets q (already multiplied by sBn).
fn loadB4(kb: u32, q: vec4u) -> vec4f {
  return vec4f(B[kb + q.x], B[kb + q.y], B[kb + q.z], B[kb + q.w]);
}

// Epilogue for one row: bias, accumulate, bounds.
fn store8(z: u32, m: u32, n0: u32, lo: vec4f, hi: vec4f) {
  if (m >= p.M) { return; }
  let v = array<f32, 8>(lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
  let o = p.offC + z * p.bsC + m * p.sCm + n0;
  for (var j = 0u; j < 8u; j++) {
    if (n0 + j < p.N) {
      var s = v[j];
      if ((p.flags & FLAG_BIAS) != 0u) { s += bias[n0 + j]; }
      if ((p.flags & FLAG_ACCUMULATE) != 0u) { s += C[o + j]; }
      C[o + j] = s;
    }
  }
}

struct Tile { z: u32, m0: u32, n0: u32, lane: u32, qa: vec4u, qb: vec4u, baseA: u32, baseB: u32 }

// Where this lane works: quad (li / 4) at (qx, qy) in the workgroup; lane (sl & 3) owns 8 columns.
fn tileOf(wg: vec3u, li: u32, sl: u32, rows: u32) -> Tile {
  var t: Tile;
  t.lane = sl & 3u;
  let quad = li / 4u;
  let qx = quad % QX;
  let qy = quad / QX;
  t.z = wg.z;
  t.m0 = (wg.y * (16u / QX) + qy) * rows;
  t.n0 = (wg.x * QX + qx) * 32u + t.lane * 8u;
  let last = p.N - 1u;
  let n = vec4u(t.n0) + vec4u(0u, 1u, 2u, 3u);
  t.qa = min(n, vec4u(last)) * p.sBn;
  t.qb = min(n + vec4u(4u), vec4u(last)) * p.sBn;
  t.baseA = p.offA + t.z * p.bsA;
  t.baseB = p.offB + (t.z / p.divB) * p.bsB;
  return t;
}

fn rowA(t: Tile, r: u32) -> u32 {
  return t.baseA + min(t.m0 + r, p.M - 1u) * p.sAm;
}

// One block of 8 rows (RQ = 1): tile 64 rows × 64 columns with QX = 2.
@compute @workgroup_size(64)
fn gemm_quad8(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32,
              @builtin(subgroup_invocation_id) sl: u32) {
  let t = tileOf(wg, li, sl, 8u);
  let ra = rowA(t, t.lane);
  let rb = rowA(t, t.lane + 4u);
  var acc: Acc8;
  let K4 = p.K & ~3u;
  for (var k = 0u; k < K4; k += 4u) {
    let kb = t.baseB + k * p.sBk;
    let bl = mat4x4f(loadB4(kb, t.qa), loadB4(kb + p.sBk, t.qa), loadB4(kb + 2u * p.sBk, t.qa), loadB4(kb + 3u * p.sBk, t.qa));
    let bh = mat4x4f(loadB4(kb, t.qb), loadB4(kb + p.sBk, t.qb), loadB4(kb + 2u * p.sBk, t.qb), loadB4(kb + 3u * p.sBk, t.qb));
    step8(&acc, loadA4(ra, k), loadA4(rb, k), bl, bh);
  }
  for (var k = K4; k < p.K; k++) {
    // tail: one k at a time, as a 4-k step whose other three k carry zeros
    let kb = t.baseB + k * p.sBk;
    let z4 = vec4f(0.0);
    let bl = mat4x4f(loadB4(kb, t.qa), z4, z4, z4);
    let bh = mat4x4f(loadB4(kb, t.qb), z4, z4, z4);
    step8(&acc, vec4f(A[ra + k * p.sAk], 0.0, 0.0, 0.0), vec4f(A[rb + k * p.sAk], 0.0, 0.0, 0.0), bl, bh);
  }
  for (var r = 0u; r < 8u; r++) { store8(t.z, t.m0 + r, t.n0, acc.lo[r], acc.hi[r]); }
}

// Two blocks of 8 rows (RQ = 2): tile 128 rows × 64 columns with QX = 2; B loads serve twice the FMAs.
@compute @workgroup_size(64)
fn gemm_quad16(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32,
               @builtin(subgroup_invocation_id) sl: u32) {
  let t = tileOf(wg, li, sl, 16u);
  let ra = rowA(t, t.lane);
  let rb = rowA(t, t.lane + 4u);
  let rc = rowA(t, t.lane + 8u);
  let rd = rowA(t, t.lane + 12u);
  var acc0: Acc8;
  var acc1: Acc8;
  let K4 = p.K & ~3u;
  for (var k = 0u; k < K4; k += 4u) {
    let kb = t.baseB + k * p.sBk;
    let bl = mat4x4f(loadB4(kb, t.qa), loadB4(kb + p.sBk, t.qa), loadB4(kb + 2u * p.sBk, t.qa), loadB4(kb + 3u * p.sBk, t.qa));
    let bh = mat4x4f(loadB4(kb, t.qb), loadB4(kb + p.sBk, t.qb), loadB4(kb + 2u * p.sBk, t.qb), loadB4(kb + 3u * p.sBk, t.qb));
    step8(&acc0, loadA4(ra, k), loadA4(rb, k), bl, bh);
    step8(&acc1, loadA4(rc, k), loadA4(rd, k), bl, bh);
  }
  for (var k = K4; k < p.K; k++) {
    let kb = t.baseB + k * p.sBk;
    let z4 = vec4f(0.0);
    let bl = mat4x4f(loadB4(kb, t.qa), z4, z4, z4);
    let bh = mat4x4f(loadB4(kb, t.qb), z4, z4, z4);
    let ka = k * p.sAk;
    step8(&acc0, vec4f(A[ra + ka], 0.0, 0.0, 0.0), vec4f(A[rb + ka], 0.0, 0.0, 0.0), bl, bh);
    step8(&acc1, vec4f(A[rc + ka], 0.0, 0.0, 0.0), vec4f(A[rd + ka], 0.0, 0.0, 0.0), bl, bh);
  }
  for (var r = 0u; r < 8u; r++) {
    store8(t.z, t.m0 + r, t.n0, acc0.lo[r], acc0.hi[r]);
    store8(t.z, t.m0 + 8u + r, t.n0, acc1.lo[r], acc1.hi[r]);
  }
}
