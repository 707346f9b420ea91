// rb4-tile — one invocation's 4×4 block of a product, accumulated in registers (gemm.wgsl's gemm_rb4
// tiling, docs/gemm.md):
//   acc[r][c] = Σ_{t < count} A[ia[r] + t·sA] · B[ib[c] + t·sB]      r, c in 0..3
// ia, ib: the first A index of each of the four rows and the first B index of each of the four
// columns (the caller clamps them to its block, so every load is in bounds); sA, sB: the step of
// the reduction index t in A and in B; the sum runs in order t = 0, 1, …, count − 1.
// It reads the including shader's `A` and `B` storage arrays by name (WGSL passes no storage
// pointers to functions without the unrestricted_pointer_parameters extension).
// A snippet, not a module: gemm.wgsl (src/kernels/gemm-variants.ts) and moe-grouped-gemm.wgsl
// (its ShaderSpec's `include`) get it prepended at module creation; WGSL has no #include.

fn rb4_tile(ia: vec4u, sA: u32, ib: vec4u, sB: u32, count: u32) -> mat4x4f {
  var acc = mat4x4f();  // acc[r] = row r, columns 0..3
  for (var t = 0u; t < count; t++) {
    let ka = t * sA;
    let kb = t * sB;
    let a = vec4f(A[ia.x + ka], A[ia.y + ka], A[ia.z + ka], A[ia.w + ka]);
    let b = vec4f(B[ib.x + kb], B[ib.y + kb], B[ib.z + kb], B[ib.w + kb]);
    acc[0] += a.x * b;
    acc[1] += a.y * b;
    acc[2] += a.z * b;
    acc[3] += a.w * b;
  }
  return acc;
}
