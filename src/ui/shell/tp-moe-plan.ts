// <tp-moe-plan>: the MoE block the ranks run, stage by stage (router, dispatch, the experts' grouped GEMMs, the shared expert, combine) with each rank's local shapes, for the page's top card.
import { LitElement, css, html, nothing } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import { expertRange, expertRows, expertRowsWords } from '../shared/moe-format.ts';
import { panelStyles } from '../shared/page-style.ts';
import { planTensorText, type MoePlan } from './moe-plan-model.ts';

/** `<tp-moe-plan .plan=${moePlan(args, run)}>`: the symbols, one row per stage, and the rows each rank's experts ran once the run is in. */
@customElement('tp-moe-plan')
export class TpMoePlan extends LitElement {
  static override styles = [
    panelStyles,
    css`
      table {
        margin-top: 4px;
      }
      .stage {
        width: 24%;
      }
      td.stage .note {
        display: block;
        font-size: 13.5px;
      }
      td.shapes {
        width: 32%;
      }
      td.shapes code {
        display: inline-block;
        margin-right: 12px;
        white-space: nowrap;
      }
      p {
        margin: 4px 0;
      }
    `,
  ];

  @property({ attribute: false }) plan: MoePlan | undefined;

  protected override render() {
    const p = this.plan;
    if (!p) return nothing;
    const d = p.degrees;
    return html`<p data-moe-plan="ranks">
        The layer with its MoE block in place of the dense MLP, on ${p.ranks} rank${p.ranks > 1 ? 's' : ''}: the attention
        t ${d.tp} × DP ${d.dp}, the experts ETP ${d.etp} × EP ${d.ep} × EDP ${d.edp}.
      </p>
      <p class="note" data-moe-plan="symbols">
        ${p.symbols.map((x, i) => html`${i ? ' · ' : ''}<span data-symbol=${x.symbol}>${x.symbol} = ${x.value} ${x.meaning}</span>`)}
      </p>
      <table data-moe-plan="stages">
        <thead>
          <tr>
            <th class="stage">stage (Megatron-Core)</th>
            <th>on every rank</th>
            <th>local shapes</th>
          </tr>
        </thead>
        <tbody>
          ${p.stages.map(
            (s) =>
              html`<tr data-stage=${s.stage}>
                <td class="stage"><strong>${s.stage}</strong> <span class="note">${s.megatron}</span></td>
                <td>${s.words}</td>
                <td class="shapes">
                  ${s.tensors.map((x) => html`<code data-tensor=${x.name}>${x.name} ${planTensorText(x)}</code>`)}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
      ${
        p.expertRows
          ? html`<p class="note" data-moe-plan="rows">
              R, the rows each rank’s experts ran:
              ${p.expertRows.map(
                (q, i) =>
                  html`${i ? ' · ' : ''}<span data-rank=${q.rank} data-rows=${expertRows(q.experts)}
                      >rank ${q.rank} ${expertRange(q.experts)} ${expertRowsWords(q.experts)}</span
                    >`,
              )}
            </p>`
          : html`<p class="note" data-moe-plan="rows">R, the rows each rank’s experts run, comes from the routing: the rank workers are running it…</p>`
      }`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-moe-plan': TpMoePlan;
  }
}
