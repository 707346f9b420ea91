// What the trace page's two projection panels (<tp-trace-projection>, <tp-trace-what-if>) share: the
// style of their control bar and error line, and the head of a table of measured against modelled times.
import { css, html, type TemplateResult } from 'lit';

/** The control bar (a wrapping row) and the error line (dark red, over panelStyles' `.error`). */
export const traceBarStyles = css`
  .bar {
    display: flex;
    flex-wrap: wrap;
    gap: 8px 16px;
    align-items: center;
    margin: 6px 0;
  }
  .error {
    color: #8a0010;
    font-weight: 600;
  }
`;

/** `<thead>` of a table of rows measured against `model`: name, measured, `model`, measured / `model`. */
export function measuredAgainstHead(model: string): TemplateResult {
  return html`<thead>
    <tr>
      <th></th>
      <th class="num">measured</th>
      <th class="num">${model}</th>
      <th class="num">measured / ${model}</th>
    </tr>
  </thead>`;
}
