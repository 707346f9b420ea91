// sigmoid — σ(v) = 1 / (1 + e^−v) without overflow: with e = e^−|v| ≤ 1, σ(v) = 1 / (1 + e) for
// v ≥ 0 and e / (1 + e) for v < 0, so neither branch divides by infinity.
// A snippet, not a module: swiglu.wgsl, moe-score.wgsl and moe-router-loss.wgsl list it in their
// ShaderSpec's `include`, and it is prepended to them at module creation (src/kernels/shader-source.ts);
// WGSL has no #include.

fn sigmoid_of(v: f32) -> f32 {
  let e = exp(-abs(v));
  return select(e / (1.0 + e), 1.0 / (1.0 + e), v >= 0.0);
}
