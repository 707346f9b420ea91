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
export const classroomStyles = css`
  :host {
    display: block;
    font-size: 18px;
  }
  .nav {
    display: flex;
    gap: 12px;
    align-items: center;
    margin: 8px 0 12px;
    flex-wrap: wrap;
  }
  .nav button {
    font-size: 18px;
    padding: 6px 16px;
    cursor: pointer;
  }
  .nav .count {
    font-variant-numeric: tabular-nums;
    color: #333;
  }
  h2.step-title {
    font-size: 26px;
    margin: 4px 0 8px;
    color: #0b2b55;
  }
  p.text {
    max-width: 72em;
    font-size: 19px;
    line-height: 1.45;
    margin: 0 0 10px;
  }
  .megatron code,
  .coll code {
    font-size: 16px;
    background: #eef2f7;
    padding: 1px 5px;
    border-radius: 3px;
  }
  .coll {
    margin: 4px 0;
    font-size: 17px;
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
    font-size: 17px;
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
    margin: 12px 0;
    font-size: 19px;
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
    font-size: 17px;
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
    font-size: 17px;
  }
`;
