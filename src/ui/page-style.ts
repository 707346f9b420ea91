// Shared CSS of the page's panels: projector-legible type, high-contrast tables, buttons and messages.
import { css } from 'lit';

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
