// gemm-subgroup — register-blocked GEMMs whose 4 quad lanes share the rows of A.
// Needs the `subgroups` feature (hence a module of its own: `enable subgroups` must not reach
// adapters without it). Same Params, bindings and semantics as gemm.wgsl:
//   C_z[m, n] = Σ_k A_z(m, k) · B_z(k, n) (+ bias[n]) (+ C_z[m, n])
//   A_z(m, k) = A[offA + z·bsA + m·sAm + k·sAk]      B_z(k, n) = B[offB + (z / divB)·bsB + k·sBk + n·sBn]
//   C_z[m, n] = C[offC + z·bsC + m·sCm + n]
// bindings: 0 params (uniform), 1 A (read), 2 B (read), 3 C (read_write), 4 bias [N] (read);
// the staged variant reads A and B from textures instead: 5 At, 6 Bt (see gemm_staged32).
// Each lane of a quad owns an 8-column strip and loads, per group of 4 rows the quad owns, one
// row of A (row `lane` of the group); quad swaps hand it the other three (slot s of a group holds
// row lane ^ s: quadSwapX for s = 1, quadSwapY 2, quadSwapDiagonal 3), so the quad loads each value
// of A once. On SIMD-on-CPU adapters (SwiftShader) every buffer load is a per-lane gather and a
// swap is one shuffle, so sharing cuts loads per FMA at almost no cost (a broadcast costs ~6×).
// Workgroup: QUADS quads (4·QUADS lanes), QX along N × (QUADS / QX) along M.
// Tile: (QUADS / QX)·(rows per quad) rows × QX·32 columns. Grid: (⌈N / tileN⌉, ⌈M / tileM⌉, batch).
enable subgroups;

struct Params {
  M: u32, N: u32, K: u32, batch: u32,
  offA: u32, sAm: u32, sAk: u32, bsA: u32,
  offB: u32, sBk: u32, sBn: u32, bsB: u32,
  divB: u32, offC: u32, sCm: u32, bsC: u32,
  flags: u32, Kp: u32, _p1: u32, _p2: u32,  // Kp: K rounded up to 8 (the staged variant's textures)
}

override QX: u32 = 2u;
override QUADS: u32 = 16u;  // quads per workgroup
// The epilogue, specialised per problem by gemm.ts (pipeline constants): ACCUMULATE adds C's old
// value (flags bit 2 is not read here); EDGE guards each store by m < M and n < N, needed unless
// the grid's tiles cover M × N exactly. Compiled out, not branched around, because SwiftShader
// pays for both when no lane needs them: staged32 on 2 cores, 15 interleaved rounds, medians:
// 256 × 256 × 8 2.7 ms with both as runtime flags, 1.6 ms without the accumulate path, 1.1 ms
// without both; 256³ 11.8 → 9.9 ms.
override ACCUMULATE: bool = false;
override EDGE: bool = true;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
// Staged operands (gemm-pack.wgsl), each one run of texels 2048 wide: At texel (z·M + m)·Kp/4 + kq
// = A_z(m, 4kq..4kq+3); Bt texel ((z / divB)·Kp + k)·⌈N/4⌉ + nq = B(k, 4nq..4nq+3); zero past K
// (up to Kp) and past N.
@group(0) @binding(5) var At: texture_2d<f32>;
@group(0) @binding(6) var Bt: texture_2d<f32>;

const FLAG_BIAS = 1u;

// 8 rows × 8 columns of accumulators: lo holds columns 0..3, hi columns 4..7. Row slot r holds
// row (r & 4) | ((r & 3) ^ lane) of the block (see slotRow).
struct Acc8 { lo: array<vec4f, 8>, hi: array<vec4f, 8> }

// The block row that accumulator slot r of lane `lane` holds.
fn slotRow(r: u32, lane: u32) -> u32 { return (r & 4u) | ((r & 3u) ^ lane); }

// acc[slot] += Bk · x for one block of 8 rows and 4 values of k; ma / mb are this lane's rows
// (lane, lane + 4) of the block at those k; bl / bh are B's 4 k-rows × this lane's 8 columns.
fn step8(acc: ptr<function, Acc8>, ma: vec4f, mb: vec4f, bl: mat4x4f, bh: mat4x4f) {
  (*acc).lo[0] += bl * ma; (*acc).hi[0] += bh * ma;
  (*acc).lo[4] += bl * mb; (*acc).hi[4] += bh * mb;
  var x = quadSwapX(ma); (*acc).lo[1] += bl * x; (*acc).hi[1] += bh * x;
  x = quadSwapX(mb); (*acc).lo[5] += bl * x; (*acc).hi[5] += bh * x;
  x = quadSwapY(ma); (*acc).lo[2] += bl * x; (*acc).hi[2] += bh * x;
  x = quadSwapY(mb); (*acc).lo[6] += bl * x; (*acc).hi[6] += bh * x;
  x = quadSwapDiagonal(ma); (*acc).lo[3] += bl * x; (*acc).hi[3] += bh * x;
  x = quadSwapDiagonal(mb); (*acc).lo[7] += bl * x; (*acc).hi[7] += bh * x;
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

// The epilogue. SwiftShader runs the body of every `if` under a lane mask even when no lane takes
// it (its loads and stores still pay their per-lane checks); only a loop whose lanes are all done
// is skipped. So bias is a loop of 0 or 1 trip on the flags, and, the same for every row, is read
// once per lane: `Epilogue` holds it for the lane's 8 columns (accumulate and the store guards are
// pipeline constants, above).
struct Epilogue { z: u32, n0: u32, blo: vec4f, bhi: vec4f }

fn epilogueOf(z: u32, n0: u32) -> Epilogue {
  var e = Epilogue(z, n0, vec4f(0.0), vec4f(0.0));
  for (var i = 0u; i < (p.flags & FLAG_BIAS); i++) {
    let lo = min(vec4u(n0) + vec4u(0u, 1u, 2u, 3u), vec4u(p.N - 1u));
    let hi = min(lo + vec4u(4u), vec4u(p.N - 1u));
    e.blo = vec4f(bias[lo.x], bias[lo.y], bias[lo.z], bias[lo.w]);
    e.bhi = vec4f(bias[hi.x], bias[hi.y], bias[hi.z], bias[hi.w]);
  }
  return e;
}

// C row m, this lane's 8 columns from n0: lo + bias (+ C if ACCUMULATE), stored where m < M and
// n < N (every one of them unless EDGE).
fn store8(e: Epilogue, m: u32, lo: vec4f, hi: vec4f) {
  let row = p.offC + e.z * p.bsC + min(m, p.M - 1u) * p.sCm;
  let o = row + e.n0;
  var l = lo + e.blo;
  var h = hi + e.bhi;
  if (ACCUMULATE) {
    let last = row + p.N - 1u;
    l += vec4f(C[min(o, last)], C[min(o + 1u, last)], C[min(o + 2u, last)], C[min(o + 3u, last)]);
    h += vec4f(C[min(o + 4u, last)], C[min(o + 5u, last)], C[min(o + 6u, last)], C[min(o + 7u, last)]);
  }
  if (!EDGE) {
    C[o] = l.x; C[o + 1u] = l.y; C[o + 2u] = l.z; C[o + 3u] = l.w;
    C[o + 4u] = h.x; C[o + 5u] = h.y; C[o + 6u] = h.z; C[o + 7u] = h.w;
  } else if (m < p.M) {
    let n = e.n0;
    if (n < p.N) { C[o] = l.x; }
    if (n + 1u < p.N) { C[o + 1u] = l.y; }
    if (n + 2u < p.N) { C[o + 2u] = l.z; }
    if (n + 3u < p.N) { C[o + 3u] = l.w; }
    if (n + 4u < p.N) { C[o + 4u] = h.x; }
    if (n + 5u < p.N) { C[o + 5u] = h.y; }
    if (n + 6u < p.N) { C[o + 6u] = h.z; }
    if (n + 7u < p.N) { C[o + 7u] = h.w; }
  }
}

// Stores one block of 8 rows from row r0 of the tile (slot r holds row slotRow(r, lane)).
fn storeAcc(t: Tile, e: Epilogue, r0: u32, acc: ptr<function, Acc8>) {
  let m = t.m0 + r0;
  store8(e, m + slotRow(0u, t.lane), (*acc).lo[0], (*acc).hi[0]);
  store8(e, m + slotRow(1u, t.lane), (*acc).lo[1], (*acc).hi[1]);
  store8(e, m + slotRow(2u, t.lane), (*acc).lo[2], (*acc).hi[2]);
  store8(e, m + slotRow(3u, t.lane), (*acc).lo[3], (*acc).hi[3]);
  store8(e, m + slotRow(4u, t.lane), (*acc).lo[4], (*acc).hi[4]);
  store8(e, m + slotRow(5u, t.lane), (*acc).lo[5], (*acc).hi[5]);
  store8(e, m + slotRow(6u, t.lane), (*acc).lo[6], (*acc).hi[6]);
  store8(e, m + slotRow(7u, t.lane), (*acc).lo[7], (*acc).hi[7]);
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
  t.m0 = (wg.y * (QUADS / QX) + qy) * rows;
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
@compute @workgroup_size(QUADS * 4u)
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
  storeAcc(t, epilogueOf(t.z, t.n0), 0u, &acc);
}

// Two blocks of 8 rows (RQ = 2): tile 128 rows × 64 columns with QX = 2; B loads serve twice the FMAs.
@compute @workgroup_size(QUADS * 4u)
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
  let e = epilogueOf(t.z, t.n0);
  storeAcc(t, e, 0u, &acc0);
  storeAcc(t, e, 8u, &acc1);
}

// acc[slot] += Bk · x for one block of 8 rows and 8 values of k (two 4-k halves: ma, mb, bl, bh
// and na, nb, cl, ch as in step8), each accumulator read and written once per 8 k.
fn step8k8(acc: ptr<function, Acc8>, ma: vec4f, mb: vec4f, bl: mat4x4f, bh: mat4x4f,
           na: vec4f, nb: vec4f, cl: mat4x4f, ch: mat4x4f) {
  (*acc).lo[0] += bl * ma + cl * na; (*acc).hi[0] += bh * ma + ch * na;
  (*acc).lo[4] += bl * mb + cl * nb; (*acc).hi[4] += bh * mb + ch * nb;
  var x = quadSwapX(ma); var y = quadSwapX(na);
  (*acc).lo[1] += bl * x + cl * y; (*acc).hi[1] += bh * x + ch * y;
  x = quadSwapX(mb); y = quadSwapX(nb);
  (*acc).lo[5] += bl * x + cl * y; (*acc).hi[5] += bh * x + ch * y;
  x = quadSwapY(ma); y = quadSwapY(na);
  (*acc).lo[2] += bl * x + cl * y; (*acc).hi[2] += bh * x + ch * y;
  x = quadSwapY(mb); y = quadSwapY(nb);
  (*acc).lo[6] += bl * x + cl * y; (*acc).hi[6] += bh * x + ch * y;
  x = quadSwapDiagonal(ma); y = quadSwapDiagonal(na);
  (*acc).lo[3] += bl * x + cl * y; (*acc).hi[3] += bh * x + ch * y;
  x = quadSwapDiagonal(mb); y = quadSwapDiagonal(nb);
  (*acc).lo[7] += bl * x + cl * y; (*acc).hi[7] += bh * x + ch * y;
}

const STAGED_WIDTH = 2048u;

fn staged(t: texture_2d<f32>, i: u32) -> vec4f {
  return textureLoad(t, vec2u(i % STAGED_WIDTH, i / STAGED_WIDTH), 0);
}

// B's 4 k-rows from k: `at` is the texel of row k (see gemm_staged32), `nq` texels a row.
fn stagedB(at: u32, nq: u32) -> mat4x4f {
  return mat4x4f(staged(Bt, at), staged(Bt, at + nq), staged(Bt, at + 2u * nq), staged(Bt, at + 3u * nq));
}

// A row m (clamped to the matrix: rows past M feed only outputs never stored) at k..k+3, batch z.
fn stagedA(m: u32, k: u32, z: u32) -> vec4f {
  return staged(At, (z * p.M + min(m, p.M - 1u)) * (p.Kp / 4u) + k / 4u);
}

// Four blocks of 8 rows (32 per quad), 8 k per step, operands staged in textures: a texel load
// brings 4 floats per lane (SwiftShader: four 16-byte loads and a transpose, where a buffer
// element is a branchy per-lane gather). Tile 64 × 128 with QX = 4 and QUADS = 8; the k loop
// runs to Kp over the zero-padded textures, so it needs no tail.
@compute @workgroup_size(QUADS * 4u)
fn gemm_staged32(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32,
                 @builtin(subgroup_invocation_id) sl: u32) {
  let t = tileOf(wg, li, sl, 32u);
  let nq = (p.N + 3u) / 4u;
  // Texels of B row 0 at this lane's two column quads (clamped: columns past N are never stored).
  let b0 = (t.z / p.divB) * p.Kp * nq + min(t.n0, p.N - 1u) / 4u;
  let b1 = (t.z / p.divB) * p.Kp * nq + min(t.n0 + 4u, p.N - 1u) / 4u;
  let m = t.m0 + t.lane;
  var acc0: Acc8;
  var acc1: Acc8;
  var acc2: Acc8;
  var acc3: Acc8;
  for (var k = 0u; k < p.Kp; k += 8u) {
    let k4 = k + 4u;
    let bl = stagedB(b0 + k * nq, nq);
    let bh = stagedB(b1 + k * nq, nq);
    let cl = stagedB(b0 + k4 * nq, nq);
    let ch = stagedB(b1 + k4 * nq, nq);
    step8k8(&acc0, stagedA(m, k, t.z), stagedA(m + 4u, k, t.z), bl, bh,
            stagedA(m, k4, t.z), stagedA(m + 4u, k4, t.z), cl, ch);
    step8k8(&acc1, stagedA(m + 8u, k, t.z), stagedA(m + 12u, k, t.z), bl, bh,
            stagedA(m + 8u, k4, t.z), stagedA(m + 12u, k4, t.z), cl, ch);
    step8k8(&acc2, stagedA(m + 16u, k, t.z), stagedA(m + 20u, k, t.z), bl, bh,
            stagedA(m + 16u, k4, t.z), stagedA(m + 20u, k4, t.z), cl, ch);
    step8k8(&acc3, stagedA(m + 24u, k, t.z), stagedA(m + 28u, k, t.z), bl, bh,
            stagedA(m + 24u, k4, t.z), stagedA(m + 28u, k4, t.z), cl, ch);
  }
  let e = epilogueOf(t.z, t.n0);
  storeAcc(t, e, 0u, &acc0);
  storeAcc(t, e, 8u, &acc1);
  storeAcc(t, e, 16u, &acc2);
  storeAcc(t, e, 24u, &acc3);
}
