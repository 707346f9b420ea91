// gemm-pack — stages one operand of a GEMM for gemm_staged32 in an rgba32float texture 2048
// texels wide, as one run of texels in row-major order (texel i at (i mod 2048, i div 2048)):
//   texel ((z·RP + r)·CQ + cq) = (X_z(r, 4cq), X_z(r, 4cq + 1), X_z(r, 4cq + 2), X_z(r, 4cq + 3)),
//   X_z(r, c) = X[off + z·bs + r·sR + c·sC], zero where r ≥ R or c ≥ C,
// for layers z, RP rows per layer (R of them real), CQ texels per row. A is staged as X(m, k)
// (R = RP = M, CQ = Kp / 4), B as X(k, n) (R = K, RP = Kp, CQ = ⌈N / 4⌉), one layer per batch
// (B: per distinct B). The texture may hold more than the `count` texels written (a scratch reused
// across GEMMs); the GEMM reads only those.
// bindings: 0 params (uniform), 1 X (read), 2 the texture (write). Grid: (2048 / 64, ⌈count / 2048⌉, 1).
struct PackParams {
  R: u32, C: u32, off: u32, sR: u32,
  sC: u32, bs: u32, RP: u32, CQ: u32,
  count: u32, _p0: u32, _p1: u32, _p2: u32,
}

const WIDTH = 2048u;

@group(0) @binding(0) var<uniform> q: PackParams;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var staged: texture_storage_2d<rgba32float, write>;

@compute @workgroup_size(64)
fn pack(@builtin(global_invocation_id) g: vec3u) {
  let i = g.y * WIDTH + g.x;
  if (i >= q.count) { return; }
  let cq = i % q.CQ;
  let rz = i / q.CQ;
  let r = rz % q.RP;
  let z = rz / q.RP;
  var v = vec4f(0.0);
  if (r < q.R) {
    let row = q.off + z * q.bs + r * q.sR;
    for (var j = 0u; j < 4u; j++) {
      let c = 4u * cq + j;
      if (c < q.C) { v[j] = X[row + c * q.sC]; }
    }
  }
  textureStore(staged, g.xy, v);
}
