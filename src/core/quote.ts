/** Longest user text a message echoes before it is cut. */
export const quoteMax = 40;

/**
 * `text` in double quotes for a message, cut to `max` characters with an ellipsis and its full
 * length when longer, so a 10 kB value never lands whole on the page: "aaaa…" (10000 characters).
 */
export function quoted(text: string, max = quoteMax): string {
  const chars = [...text];
  return chars.length <= max ? `"${text}"` : `"${chars.slice(0, max).join('')}…" (${chars.length} characters)`;
}
