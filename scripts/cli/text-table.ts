// A plain-text table for the CLIs: the first column left-aligned, the others right-aligned, two spaces apart.

/** The head and rows as aligned lines, each column as wide as its widest cell. */
export function alignedTable(head: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: readonly string[]) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(head), ...rows.map(line)];
}
