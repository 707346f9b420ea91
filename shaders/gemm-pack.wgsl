// gemm-pack — stages one operand of a GEMM in an rgba32float texture array for gemm_staged32:
//   layer z, texel (x, y) = (X_z(y, 4x), X_z(y, 4x + 1), X_z(y, 4x + 2), X_z(y, 4x + 3)),
//   X_z(r, c) = X[off + z·bs + r·sR + c·sC], zero where r ≥ R or c ≥ C.
// A is staged as X(m, k) (R = M, C = K), B as X(k, n) (R = K, C = N). The texture may be larger
// than the W × H × layers region written (a scratch reused across GEMMs); the GEMM reads only that.
// bindings: 0 params (uniform), 1 X (read), 2 the texture (write). Grid: (⌈W / 64⌉, H, layers).
struct PackParams {
  R: u32, C: u32, off: u32, sR: u32,
  sC: u32, bs: u32, W: u32, H: u32,
}

@group(0) @binding(0) var<uniform> q: PackParams;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var staged: texture_storage_2d_array<rgba32float, write>;

@compute @workgroup_size(64)
fn pack(@builtin(global_invocation_id) g: vec3u) {
  if (g.x >= q.W || g.y >= q.H) { return; }
  var v = vec4f(0.0);
  if (g.y < q.R) {
    let row = q.off + g.z * q.bs + g.y * q.sR;
    for (var i = 0u; i < 4u; i++) {
      let c = 4u * g.x + i;
      if (c < q.C) { v[i] = X[row + c * q.sC]; }
    }
  }
  textureStore(staged, g.xy, g.z, v);
}
