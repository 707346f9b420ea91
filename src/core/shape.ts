/** Formats a shape the way the messages print it: [s, b, h] → "[4, 1, 16]". */
export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/** Number of elements of a shape; [] is a scalar (1 element). */
export function numel(shape: readonly number[]): number {
  return shape.reduce((a, d) => a * d, 1);
}
