// Colours, sizes and CSS of <tp-timeline>: light background, dark text, colours by kind (projector-legible).
import { css } from 'lit';
import type { BlockKind } from '../../schedule/blocks.ts';
import type { OpPhase, StepPass } from '../../parallel/plan-types.ts';

/** Fill of a block by kind and pass (backward is the darker shade); exposed blocks use the hatch pattern. */
export const blockFill: Record<Exclude<BlockKind, 'exposed' | 'wait' | 'slowed'>, Record<StepPass, string>> = {
  compute: { forward: '#2a6cc4', backward: '#173f7a' },
  comm: { forward: '#f2b632', backward: '#c98a00' },
};

/** The hover tooltip `.tip` of the timeline and the memory chart: dark, absolutely placed over the host. */
export const tipStyles = css`
  .tip {
    position: absolute;
    pointer-events: none;
    max-width: 460px;
    padding: 8px 10px;
    border-radius: 4px;
    background: rgba(20, 20, 20, 0.94);
    color: #fff;
    font-size: 14px;
    line-height: 1.35;
    white-space: pre-line;
    z-index: 1;
  }
  .tip[hidden] {
    display: none;
  }
`;

/** Compute blocks alternate two shades of their pass's blue, so that neighbours stay apart without strokes. */
export function computeFill(phase: StepPass, j: number): string {
  const shades = { forward: ['#2a6cc4', '#3b7fd6'], backward: ['#173f7a', '#22548f'] } as const;
  return shades[phase][j % 2]!;
}

/** Text colour that reads on each fill (white on blue, near-black on amber). */
export const blockText: Record<Exclude<BlockKind, 'exposed' | 'wait' | 'slowed'>, string> = {
  compute: '#ffffff',
  comm: '#111111',
};

/** Waiting inside a collective for the straggler: a grey bar along the top of the comm block. */
export const waitColor = '#5f6368';
/** The wait bar's share of the comm lane's height. */
export const waitShare = 0.42;

/** A kernel's extra time under a ring transfer: white stripes over a light blue, at the end of its block. */
export const slowedFill = { ground: '#9cc0ee', stripe: '#ffffff' } as const;

/** Exposed communication: red hatch over the comm block, red outline. */
export const exposedColor = '#d0021b';

/** Phase bands behind the lanes. */
export const bandFill: Record<OpPhase, string> = { forward: '#eef3fa', backward: '#f5eefa', finalize: '#f3f3e6' };

/** Font sizes, px: lane names and totals, block labels, axis. */
export const fontPx = { lane: 15, block: 13, axis: 13, top: 14 } as const;

/** Margins around the plot, px: lane names on the left, totals on the right (wide layout), phase names on top, axis below. */
export const margin = { left: 172, right: 300, top: 42, bottom: 34 } as const;

/** Below this width the totals column is narrow and its lines short ("181 µs · exposed 126 µs"), px. */
export const compactBelowPx = 1000;

/** Width of the totals column for an element `width` px wide. */
export function totalsWidth(width: number): number {
  return width < compactBelowPx ? 232 : margin.right;
}

/** The element's shadow CSS. */
export const timelineStyles = css`
  :host {
    display: block;
    font-family: system-ui, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif;
    color: #111;
    background: #fff;
  }
  .head {
    display: flex;
    flex-wrap: wrap;
    align-items: center;
    gap: 6px 18px;
    margin-bottom: 6px;
  }
  .caption {
    flex: 1 1 100%;
    margin: 0;
    font-size: 15px;
    color: #222;
  }
  .legend {
    display: flex;
    flex-wrap: wrap;
    gap: 4px 16px;
    font-size: 14px;
  }
  .legend span {
    display: inline-flex;
    align-items: center;
    gap: 6px;
  }
  .legend svg {
    width: 28px;
    height: 16px;
  }
  button {
    font: inherit;
    font-size: 14px;
    padding: 3px 10px;
    border: 1px solid #555;
    border-radius: 4px;
    background: #f4f4f4;
    color: #111;
    cursor: pointer;
  }
  .hint {
    font-size: 13px;
    color: #444;
  }
  .chart {
    position: relative;
  }
  svg.plot {
    display: block;
    width: 100%;
    touch-action: none;
    user-select: none;
    cursor: grab;
  }
  svg.plot:active {
    cursor: grabbing;
  }
  ${tipStyles}
  .empty {
    font-size: 15px;
    color: #444;
    padding: 16px 0;
  }
`;
