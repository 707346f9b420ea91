// row-reduce — the tree reduction of one row's per-lane partials across a workgroup of WG lanes
// (WG a power of two, declared by the including shader as `override WG: u32`). Every lane calls it
// with its partial v; every lane gets the max (reduce_max) or the sum (reduce_sum) of all WG partials:
//   round s = WG/2, WG/4, …, 1: red[l] ← red[l] ⊕ red[l + s] for l < s, a barrier between rounds.
// A snippet, not a module: shaders that use it list it in their ShaderSpec's `include`, and it is
// prepended to them at module creation (src/kernels/shader-source.ts); WGSL has no #include.

var<workgroup> red: array<f32, WG>;

fn reduce_max(lane: u32, v: f32) -> f32 {
  red[lane] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lane < s) { red[lane] = max(red[lane], red[lane + s]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

fn reduce_sum(lane: u32, v: f32) -> f32 {
  red[lane] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lane < s) { red[lane] = red[lane] + red[lane + s]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
