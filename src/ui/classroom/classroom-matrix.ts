// A matrix of the classroom as a grid of its real numbers, tinted by the rank that holds it.
import { html, type TemplateResult } from 'lit';
import type { ClassroomPanel } from '../../parallel/classroom.ts';
import { rankColor } from './classroom-style.ts';

/** A number as the grid prints it: 3 decimals (the classroom's activations are O(0.01–1)), no "-0.000". */
export function cellText(v: number): string {
  return Math.abs(v) < 0.0005 ? '0.000' : v.toFixed(3);
}

/**
 * The panel's [rows, cols] matrix as a CSS grid: each cell prints its value (3 decimals) and keeps
 * the float32 value in `data-value`; the cell's tint grows with |v| / max|v| in the rank's colour.
 */
export function matrixGrid(p: ClassroomPanel): TemplateResult {
  const [rows, cols] = p.matrix.shape;
  const color = rankColor(p.rank);
  const data = p.matrix.data;
  const max = data.reduce((m, v) => Math.max(m, Math.abs(v)), 0) || 1;
  const cells = Array.from(data, (v) => {
    const alpha = Math.round(20 + 160 * Math.min(1, Math.abs(v) / max))
      .toString(16)
      .padStart(2, '0');
    return html`<span data-value=${String(v)} style="background:${color}${alpha}">${cellText(v)}</span>`;
  });
  return html`<figure data-rank=${p.rank ?? 'all'} data-label=${p.label}>
    <figcaption style="color:${color}">${p.label}<span class="dims">${p.dims} = [${rows}, ${cols}]</span></figcaption>
    <div class="grid" style="grid-template-columns:repeat(${cols}, auto); border-color:${color}">${cells}</div>
  </figure>`;
}
