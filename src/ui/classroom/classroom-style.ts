// Colours and CSS of the classroom step-through: one colour per rank, grids legible on a projector.
import { css } from 'lit';

/** One colour per rank (Tableau 10, colour-blind friendlier than d3's category10), wrapping after 10. */
const rankPalette = [
  '#4e79a7',
  '#f28e2b',
  '#59a14f',
  '#e15759',
  '#76b7b2',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
];

/** The colour of rank r; null (every rank / logical) is grey. */
export function rankColor(rank: number | null): string {
  return rank === null ? '#6b7480' : rankPalette[rank % rankPalette.length];
}

/** Styles of <tp-classroom>: step header, navigation, matrix grids and check lines. */
/** Host and SVG sizing shared by the classroom's figure elements: natural size where it fits, scaled down (text included) where it does not. */
export const figureStyles = css`
  :host {
    display: block;
    max-width: 100%;
    overflow-x: auto;
  }
  svg {
    display: block;
    font-family: system-ui, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif;
    /* natural size (its width attribute) where it fits, scaled down with its text where it does not */
    max-width: 100%;
    height: auto;
  }
`;

export const classroomStyles = css`
  :host {
    display: block;
    /* Body text grows with the screen: 18 px at 1280 wide, 25 px at 1920 (a projector), at most 32 px. */
    font-size: clamp(18px, 1.3vw, 32px);
  }
  :host([presenter]) {
    position: fixed;
    inset: 0;
    z-index: 1000;
    overflow: auto;
    background: #fff;
    padding: 16px 28px;
    box-sizing: border-box;
    font-size: clamp(24px, 1.5vw, 40px);
  }
  .layout {
    display: grid;
    grid-template-columns: minmax(11em, 14em) 1fr;
    gap: 20px;
    align-items: start;
  }
  nav.outline {
    display: flex;
    flex-direction: column;
    gap: 4px;
    position: sticky;
    top: 8px;
  }
  nav.outline button {
    text-align: left;
    font-size: 0.8em;
    padding: 4px 8px;
    border: 1px solid #c8d0da;
    background: #f6f8fb;
    border-radius: 4px;
    cursor: pointer;
  }
  nav.outline button.current {
    background: #0b2b55;
    color: #fff;
    border-color: #0b2b55;
  }
  .figures {
    display: flex;
    flex-wrap: wrap;
    align-items: flex-start;
    gap: 18px 40px;
    margin: 4px 0 10px;
  }
  .switch {
    display: inline-flex;
    gap: 6px;
    align-items: center;
  }
  .switch input {
    width: 1.1em;
    height: 1.1em;
  }
  .nav {
    display: flex;
    gap: 12px;
    align-items: center;
    margin: 8px 0 12px;
    flex-wrap: wrap;
  }
  .nav button {
    font-size: 1em;
    padding: 6px 16px;
    cursor: pointer;
  }
  .nav .count {
    font-variant-numeric: tabular-nums;
    color: #333;
  }
  h2.step-title {
    font-size: 1.4em;
    margin: 4px 0 8px;
    color: #0b2b55;
  }
  p.text {
    max-width: 60em;
    font-size: 1em;
    line-height: 1.45;
    margin: 0 0 10px;
  }
  .megatron code,
  .coll code {
    font-size: 0.85em;
    background: #eef2f7;
    padding: 1px 5px;
    border-radius: 3px;
  }
  .coll {
    margin: 4px 0;
    font-size: 0.9em;
  }
  .panels {
    display: flex;
    flex-wrap: wrap;
    gap: 18px 26px;
    align-items: flex-start;
    margin-top: 10px;
  }
  figure {
    margin: 0;
    max-width: 100%;
    overflow-x: auto;
  }
  figcaption {
    font-size: 0.85em;
    font-weight: 600;
    margin-bottom: 4px;
  }
  figcaption .dims {
    font-weight: 400;
    font-family: ui-monospace, 'DejaVu Sans Mono', monospace;
    margin-left: 6px;
  }
  .grid {
    display: grid;
    gap: 1px;
    border: 3px solid;
    width: max-content;
    font-family: ui-monospace, 'DejaVu Sans Mono', monospace;
    font-size: 13px;
  }
  .grid span {
    padding: 1px 3px;
    text-align: right;
    min-width: 3.4em;
    font-variant-numeric: tabular-nums;
  }
  .checks {
    margin: 8px 0 12px;
    font-size: 1em;
  }
  .checks .pass {
    color: #0a7a2f;
    font-weight: 700;
  }
  .checks .fail {
    color: #c00;
    font-weight: 700;
  }
  .status {
    font-size: 0.9em;
    color: #333;
  }
  .error {
    color: #c00;
  }
  .heads {
    display: flex;
    gap: 8px;
    flex-wrap: wrap;
    margin: 8px 0;
  }
  .head,
  .group {
    border: 3px solid;
    padding: 6px 10px;
    border-radius: 6px;
    font-size: 0.9em;
  }
`;
