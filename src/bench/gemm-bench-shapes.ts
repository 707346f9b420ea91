/** One benchmarked shape: what it stands for and its dims. */
export interface GemmBenchShape {
  readonly name: string;
  readonly M: number;
  readonly N: number;
  readonly K: number;
}

/** Square GEMMs, then the TP shards of a 1024 → 4096 → 1024 MLP at M = 512 tokens. */
export function gemmBenchShapes(): GemmBenchShape[] {
  const shapes: GemmBenchShape[] = [256, 512, 1024].map((s) => ({ name: `square ${s}`, M: s, N: s, K: s }));
  for (const t of [1, 2, 4, 8]) shapes.push({ name: `column-parallel t=${t}`, M: 512, N: 4096 / t, K: 1024 });
  for (const t of [1, 2, 4, 8]) shapes.push({ name: `row-parallel t=${t}`, M: 512, N: 1024, K: 4096 / t });
  return shapes;
}
