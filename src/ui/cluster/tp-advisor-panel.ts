// <tp-advisor-panel>: the advisor over the cluster panel's model with the page's kernel switches, in a worker, with progress; a row applies what the page can set.
import * as Comlink from 'comlink';
import { LitElement, css, html, nothing } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { budgetDegrees, resolveGlobalBatch } from '../../megatron/global-batch.ts';
import { cudaGraphFlags } from '../../megatron/cuda-graph-rules.ts';
import { layoutFlags } from '../../megatron/parallel-layout.ts';
import type { KernelOptions } from '../../projection/layer/kernel-options.ts';
import { kernelOptionsOf } from '../settings/kernel-switches.ts';
import { advisorRejectionText, type AdvisorRejection, type AdvisorRow } from '../../projection/studies/advisor.ts';
import { panelStyles } from '../shared/page-style.ts';
import { systemOf } from '../settings/system-files.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import { formatMs } from '../../core/format.ts';
import { clusterModelName } from '../settings/cluster-model-choice.ts';
import { clusterModelLayers, clusterModelOf, type ClusterModelSpec } from '../settings/cluster-model.ts';
import { settingsChangeEvent } from '../settings/settings-change.ts';
import type { Settings } from '../settings/state.ts';
import { applyAdvisorRow, rowOnPage } from './advisor-apply.ts';
import type { AdvisorAnswer, AdvisorWorker } from './advisor.worker.ts';
import { LatestWins } from '../../session/latest-wins.ts';
import { inFreshWorker } from './fresh-worker.ts';

/** Rows the panel shows. */
const topK = 10;

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/**
 * `<tp-advisor-panel>`: for the cluster panel's model on the page's system, dtype, N and global
 * batch, the advisor (src/projection/studies/advisor.ts, as `npm run project -- --search`) enumerates
 * t, p, v, cp, b, SP, recompute, the distributed optimizer, the overlaps and FSDP in a Web Worker,
 * with the page's kernel switches (layerArch, attn, fp8, graphs), shows its progress, the rejections by
 * reason and the fastest layouts; a row's Apply sets every page setting the row has
 * (applyAdvisorRow: t, SP, p, v, cp, recompute, distopt, the overlaps, FSDP, b for the page's own layer)
 * and its tooltip names any flag it cannot set. Events up: `settings-change`.
 */
@customElement('tp-advisor-panel')
export class TpAdvisorPanel extends LitElement {
  static override styles = [
    panelStyles,
    css`
      progress {
        width: 240px;
        vertical-align: middle;
      }
      td.flags {
        font-family: ui-monospace, monospace;
        font-size: 11px;
      }
    `,
  ];

  @property({ attribute: false }) settings: Settings | undefined;
  @state() private progress: { done: number; total: number } | undefined;
  @state() private answer: AdvisorAnswer | undefined;
  /** The kernel switches the shown answer was searched with. */
  @state() private searched: KernelOptions | undefined;
  @state() private error = '';
  /** The running search: a new search terminates its worker. */
  private readonly searches = new LatestWins();

  override disconnectedCallback(): void {
    this.searches.drop();
    super.disconnectedCallback();
  }

  /** Runs the advisor in a fresh worker (a running search is abandoned). */
  async search(): Promise<void> {
    const s = this.settings;
    if (!s) return;
    this.searches.drop();
    this.error = '';
    this.answer = undefined;
    this.searched = undefined;
    const kernels = kernelOptionsOf(s);
    let globalBatch: number;
    let system: SystemSpec;
    let model: ClusterModelSpec;
    try {
      model = clusterModelOf(s);
      system = systemOf(s.system);
      globalBatch = resolveGlobalBatch(s.gbatch, model.sizes.b, s.gpus, budgetDegrees(s.gpus));
    } catch (e) {
      this.error = e instanceof Error ? e.message : String(e);
      return;
    }
    this.progress = { done: 0, total: 1 };
    const search = (worker: Worker, live: () => boolean): Promise<AdvisorAnswer> =>
      Comlink.wrap<AdvisorWorker>(worker).search(
        {
          model: { sizes: sizesWithoutB(model), layers: model.layers, ...(model.moe && { moe: model.moe }) },
          extras: {
            ...(model.mla && { mla: model.mla }),
            ...(model.tiedEmbeddings !== undefined && { tiedEmbeddings: model.tiedEmbeddings }),
          },
          system,
          dtype: s.dtype,
          kernels,
          gpus: s.gpus,
          globalBatch,
          k: topK,
        },
        Comlink.proxy((done: number, total: number) => {
          if (live()) this.progress = { done, total };
        }),
      );
    await this.searches.run({
      work: (req) =>
        inFreshWorker(
          req,
          () => new Worker(new URL('./advisor.worker.ts', import.meta.url), { type: 'module', name: 'advisor' }),
          search,
        ),
      done: (answer) => {
        this.answer = answer;
        this.searched = kernels;
      },
      failed: (e) => (this.error = e instanceof Error ? e.message : String(e)),
      settled: () => (this.progress = undefined),
    });
  }

  private apply(row: AdvisorRow): void {
    const s = this.settings;
    if (!s) return;
    this.dispatchEvent(settingsChangeEvent(applyAdvisorRow(s, row.layout).settings, 'tp'));
  }

  /** The apply button's tooltip: what it sets, and each flag of the row the page cannot set. */
  private applyTitle(s: Settings, row: AdvisorRow): string {
    const { notApplied } = applyAdvisorRow(s, row.layout);
    const sets = `Sets t, SP, p, v, cp, recompute, the distributed optimizer, the gradient and parameter overlaps, FSDP, the async dgrad overlap and tpoverlap${s.cmodel === 'layer' ? ', b' : ''}${row.layout.ep !== undefined ? ', EP and ETP' : ''}.`;
    return notApplied.length ? `${sets} Not set (the page has no setting): ${notApplied.join('; ')}.` : sets;
  }

  private rejections(a: AdvisorAnswer) {
    const rows = (Object.entries(a.rejected) as [AdvisorRejection, number][]).filter(([, n]) => n > 0);
    return html`<ul data-advisor-rejected>
      ${rows.map(
        ([why, n]) =>
          html`<li data-reason=${why}>${n.toLocaleString('en-US')} × ${why}: ${advisorRejectionText[why]}</li>`,
      )}
    </ul>`;
  }

  private table(a: AdvisorAnswer) {
    const s = this.settings;
    return html`<table data-advisor-table>
      <thead>
        <tr>
          <th>#</th>
          <th>layout (Megatron flags)</th>
          <th>DP</th>
          <th>m</th>
          <th>step</th>
          <th>tokens/s</th>
          <th>MFU</th>
          <th>exposed</th>
          <th>memory/GPU</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${a.top.map((r, i) => {
          const current = s !== undefined && rowOnPage(s, r.layout);
          return html`<tr
            data-rank=${i + 1}
            data-tp=${r.layout.tp}
            data-sp=${String(r.layout.sp)}
            data-pp=${r.layout.pp}
            data-vpp=${r.layout.vpp}
            data-ep=${r.layout.ep ?? nothing}
            data-etp=${r.layout.etp ?? nothing}
            data-tokens=${r.tokensPerS}
          >
            <td>${i + 1}</td>
            <td class="flags">${layoutFlags(r.layout).join(' ')}</td>
            <td>${r.dp}</td>
            <td>${r.microBatches}</td>
            <td>${formatMs(r.stepMs)}</td>
            <td>${Math.round(r.tokensPerS).toLocaleString('en-US')}</td>
            <td>${pct(r.mfu)}</td>
            <td>${pct(r.exposedShare)}</td>
            <td>${r.memoryGiB.toFixed(2)} / ${r.capacityGiB.toFixed(0)} GiB</td>
            <td>
              <button
                type="button"
                data-apply=${i + 1}
                title=${s ? this.applyTitle(s, r) : ''}
                ?disabled=${current}
                @click=${() => this.apply(r)}
              >
                ${current ? 'on the page' : 'apply'}
              </button>
            </td>
          </tr>`;
        })}
      </tbody>
    </table>`;
  }

  protected override render() {
    const s = this.settings;
    if (!s) return nothing;
    const p = this.progress;
    const a = this.answer;
    return html`<h2>Advisor</h2>
      <p class="note">
        The fastest layouts of ${clusterModelName(s.cmodel)} × ${clusterModelLayers(s)} layers on ${s.gpus} GPUs of the
        chosen system in ${s.dtype}: t, p, v, cp, micro-batch, SP, recompute, distributed optimizer and the overlaps,
        each checked against Megatron-LM's rules and the GPU's memory, ranked by projected step time (the same search
        as <code>npm run project -- --search</code>), with the page's kernel switches: ${kernelText(kernelOptionsOf(s))}.
        The search includes Megatron-FSDP (its ZeRO-3 and ZeRO-2 strategies) and FSDP2 for a dense model, EP and ETP
        (1 or t) for a mixture of experts. Apply sets every flag the row names (t, SP, p, v, cp, recompute, the
        distributed optimizer, the overlaps, FSDP, EP and ETP; the micro-batch when the cluster model is this page's
        layer; its tooltip names any it cannot set), and the cluster panel projects them.
      </p>
      <button type="button" data-advisor-search ?disabled=${p !== undefined} @click=${() => void this.search()}>
        search layouts
      </button>
      ${
        p
          ? html`<span data-advisor-progress
              ><progress max=${p.total} value=${p.done}></progress> ${p.done.toLocaleString('en-US')} of
              ${p.total.toLocaleString('en-US')} candidates</span
            >`
          : nothing
      }
      ${this.error ? html`<p class="error" role="alert" data-advisor-error>${this.error}</p>` : nothing}
      ${
        a
          ? html`<p class="note" data-advisor-summary>
                ${a.candidates.toLocaleString('en-US')} candidates in ${formatMs(a.ms)} in a worker
                (${a.layersPriced} distinct layers planned); ${a.ranked.toLocaleString('en-US')} fit and ranked;
                <span data-advisor-kernels>${this.searched ? kernelText(this.searched) : ''}</span>.
              </p>
              ${this.rejections(a)}
              ${a.top.length ? this.table(a) : html`<p class="error" data-advisor-none>No layout fits.</p>`}`
          : nothing
      }`;
  }
}

/** The model's sizes as the advisor takes them (b is the layout's). */
const sizesWithoutB = (m: ClusterModelSpec): Omit<ClusterModelSpec['sizes'], 'b'> => {
  const { b: _b, ...sizes } = m.sizes;
  return sizes;
};

/** The page's kernel switches as the projection takes them (--tp-comm-overlap: the advisor's, per candidate). */

/** The switches in Megatron's spelling, for a caption (the graphs with the flags they need, cuda-graph-rules.ts). */
const kernelText = (k: KernelOptions): string =>
  `--arch ${k.layerArch}, --attention-backend ${k.attentionBackend}, --fp8-format ${k.fp8}, ${k.cudaGraphImpl === 'none' ? '--cuda-graph-impl none' : cudaGraphFlags(k.cudaGraphImpl, k.cudaGraphModules).join(' ')}`;

declare global {
  interface HTMLElementTagNameMap {
    'tp-advisor-panel': TpAdvisorPanel;
  }
}
