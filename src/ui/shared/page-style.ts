// Shared CSS of the page's panels: projector-legible type, high-contrast tables, buttons and messages.
import { css, unsafeCSS } from 'lit';
import { chartWidth } from './gemm-charts.ts';

/** Panel, table, button and message styles shared by the tp-* panels (each element adopts them). */
export const panelStyles = css`
  :host {
    display: block;
    font-family: system-ui, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif;
    font-size: 15px;
    line-height: 1.4;
    color: #111;
  }
  h2 {
    font-size: 17px;
    margin: 0 0 8px;
    color: #0b2b55;
  }
  h3 {
    font-size: 15px;
    margin: 12px 0 6px;
    color: #0b2b55;
  }
  table {
    border-collapse: collapse;
    font-size: 14px;
    width: 100%;
  }
  th,
  td {
    text-align: left;
    padding: 3px 8px;
    border-bottom: 1px solid #d5dbe3;
    vertical-align: top;
  }
  th {
    background: #eef2f7;
    font-weight: 600;
  }
  td.num,
  th.num {
    text-align: right;
    font-variant-numeric: tabular-nums;
  }
  code,
  .mono {
    font-family: ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace;
    font-size: 13.5px;
  }
  button {
    font: inherit;
    font-size: 14px;
    padding: 5px 12px;
    border: 1px solid #2a4a7a;
    border-radius: 6px;
    background: #fff;
    color: #0b2b55;
    cursor: pointer;
  }
  button:hover {
    background: #e8f0fb;
  }
  button:focus-visible,
  select:focus-visible,
  input:focus-visible {
    outline: 3px solid #f2b632;
    outline-offset: 1px;
  }
  .error {
    color: #a3000f;
    font-weight: 600;
  }
  .note {
    color: #374151;
  }
`;

/** Fieldsets, labels and inputs of <tp-controls>: large hit targets, red outline on an invalid control. */
export const controlStyles = css`
  fieldset {
    border: 1px solid #c7d0dc;
    border-radius: 8px;
    margin: 0 0 10px;
    padding: 6px 10px 10px;
    /* A fieldset's default min-inline-size is min-content: a wide control would widen the sidebar. */
    min-inline-size: 0;
  }
  legend {
    font-weight: 700;
    color: #0b2b55;
    padding: 0 4px;
  }
  label {
    display: flex;
    align-items: center;
    justify-content: space-between;
    gap: 8px;
    margin: 4px 0;
  }
  label.check {
    justify-content: flex-start;
  }
  select {
    max-width: 185px;
  }
  select,
  input[type='number'] {
    font: inherit;
    font-size: 15px;
    padding: 3px 6px;
    border: 1px solid #6b7a90;
    border-radius: 5px;
    background: #fff;
    color: #111;
  }
  input[type='number'] {
    width: 6.5em;
  }
  /* Room for ten digits (bytes and elements, 1073741824). */
  input[type='number'].wide {
    width: 8.5em;
  }
  /* A text input's default size (20 characters) with its label's longest word outgrew the sidebar. */
  label > input[type='text'] {
    width: 8.5em;
    min-width: 0;
  }
  label > input[type='file'] {
    min-width: 0;
    max-width: 70%;
  }
  input[type='checkbox'],
  input[type='radio'] {
    width: 18px;
    height: 18px;
  }
  .sizes {
    display: grid;
    grid-template-columns: 1fr;
  }
  .error {
    margin: 2px 0 6px;
    font-size: 14px;
    background: #fdecee;
    border-left: 4px solid #a3000f;
    padding: 4px 6px;
  }
  details.hint summary {
    cursor: pointer;
  }
  .hint {
    font-size: 13.5px;
    color: #374151;
    margin: 2px 0;
    /* A file path or a flag in a hint wraps rather than widening the sidebar. */
    overflow-wrap: anywhere;
  }
  label.block {
    display: block;
  }
  label.block input[type='file'] {
    display: block;
    max-width: 100%;
  }
  textarea {
    display: block;
    width: 100%;
    box-sizing: border-box;
    font: 12px ui-monospace, monospace;
    margin-top: 2px;
  }
  [aria-invalid='true'] {
    border-color: #a3000f;
    outline: 2px solid #a3000f;
  }
`;

/**
 * A grid of fixed-size charts and panels (`.charts`): columns of chartWidth px, as many as fit
 * (auto-fill), each child kept at its own size, so no chart is ever scaled to fill a row; a
 * wider child (e.g. a panel of its own) spans with `grid-column: span 2`.
 */
export const chartGridStyles = css`
  .charts {
    display: grid;
    grid-template-columns: repeat(auto-fill, ${unsafeCSS(chartWidth)}px);
    align-items: start;
    gap: 12px 16px;
  }
  .charts > svg {
    display: block;
    max-width: none;
  }
`;
