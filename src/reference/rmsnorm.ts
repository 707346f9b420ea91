/** CPU twin of rmsnorm in float64: x rows of h, gain g [h] → y (same length) and rstd (one per row). */
export function rmsnormRef(
  x: ArrayLike<number>,
  g: ArrayLike<number>,
  h: number,
  eps = 1e-5,
): { y: Float64Array; rstd: Float64Array } {
  const rows = h === 0 ? 0 : x.length / h;
  const y = new Float64Array(x.length);
  const rstd = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let j = 0; j < h; j++) ss += x[r * h + j] ** 2;
    rstd[r] = 1 / Math.sqrt(ss / h + eps);
    for (let j = 0; j < h; j++) y[r * h + j] = x[r * h + j] * rstd[r] * g[j];
  }
  return { y, rstd };
}

/**
 * CPU twin of the rmsnorm backward in float64: dx (same length as x) and dg [h], dg summed over
 * all rows given (pass a slice of rows for a block's partial).
 */
export function rmsnormBackwardRef(
  x: ArrayLike<number>,
  g: ArrayLike<number>,
  dy: ArrayLike<number>,
  h: number,
  eps = 1e-5,
): { dx: Float64Array; dg: Float64Array } {
  const { rstd } = rmsnormRef(x, g, h, eps);
  const dx = new Float64Array(x.length);
  const dg = new Float64Array(h);
  for (let r = 0; r < rstd.length; r++) {
    const base = r * h,
      q = rstd[r];
    let d = 0;
    for (let j = 0; j < h; j++) d += dy[base + j] * g[j] * x[base + j];
    for (let j = 0; j < h; j++) {
      dx[base + j] = q * dy[base + j] * g[j] - (x[base + j] * q ** 3 * d) / h;
      dg[j] += dy[base + j] * x[base + j] * q;
    }
  }
  return { dx, dg };
}
