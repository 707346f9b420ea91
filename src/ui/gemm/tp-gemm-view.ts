// <tp-gemm-view>: every GEMM of the layer at TP = 1, 2, 4, 8 — local shapes, GFLOP/s, and why TP stops paying off.
import { LitElement, css, html, nothing, type PropertyValues, type TemplateResult } from 'lit';
import { customElement, property, query, state } from 'lit/decorators.js';
import { runSweep, type SweepReport } from '../../session/sweep.ts';
import { LatestWins } from '../../session/latest-wins.ts';
import { configFromPreset, type LayerConfig } from '../../parallel/config.ts';
import type { OpPhase } from '../../parallel/plan-types.ts';
import type { PoolLender } from '../../session/layer-run.ts';
import { drawLineChart, seriesColor } from '../shared/gemm-charts.ts';
import { gemmDegrees, gemmEfficiency, type GemmEfficiency, type GemmRow } from '../../schedule/gemm-efficiency.ts';
import { chartGridStyles, panelStyles } from '../shared/page-style.ts';
import type { TrainDtype } from '../../hardware/dtype.ts';
import { gemmTime } from '../../hardware/kernel-time.ts';
import type { SystemSpec } from '../../hardware/systems.ts';
import { systemOf } from '../settings/system-files.ts';

const fmt = (v: number, digits = 3): string => (Number.isFinite(v) ? Number(v.toPrecision(digits)).toString() : '—');

/**
 * `<tp-gemm-view>`: for `config`'s sizes (its tp is ignored), runs the layer at every legal degree
 * of 1, 2, 4, 8 as a sweep on real rank workers (progress shown, Cancel stops it) and shows per
 * GEMM its local M, N, K, FLOPs, time and GFLOP/s with the efficiency against TP = 1, charts of
 * GFLOP/s and per-rank time vs t, and the step's speed-up (measured compute + comm modeled on
 * `net`) against the ideal t. Each table cell carries data-gemm, data-t, data-m/n/k, data-gflops.
 */
@customElement('tp-gemm-view')
export class TpGemmView extends LitElement {
  static override styles = [
    panelStyles,
    chartGridStyles,
    css`
      .bar {
        display: flex;
        gap: 12px;
        align-items: center;
        flex-wrap: wrap;
        margin: 6px 0 10px;
      }
      button,
      select {
        font-size: 16px;
        padding: 4px 12px;
      }
      .skipped {
        color: #7a4b00;
      }
      .error {
        color: #c00;
      }
      td.shape {
        font-family: ui-monospace, 'DejaVu Sans Mono', monospace;
        white-space: nowrap;
      }
      td.low {
        color: #b00020;
        font-weight: 600;
      }
      .note {
        color: #444;
        font-size: 14px;
        max-width: 80em;
      }
      .scroll {
        overflow-x: auto;
      }
    `,
  ];

  /** The model sizes (tp is ignored; every legal degree of 1, 2, 4, 8 is run), and SP. */
  /** The real cluster whose GPU the projected efficiency column uses (src/hardware/systems.ts name or custom:…). */
  @property() system = 'v100-pcie-8';
  /** The projected training format (this page's WebGPU GEMMs are fp32). */
  @property() dtype: TrainDtype = 'fp16';

  @property({ attribute: false }) config: LayerConfig = configFromPreset('classroom');
  /** Interconnect for the modeled communication ('pcie-gen3', …, 'custom:α:GB/s', or 'measured'). */
  @property() net = 'pcie-gen3';
  /** Megatron's async dgrad all-reduce overlapped with wgrad in the step time. */
  @property({ type: Boolean }) overlap = true;
  /** Lends warm rank workers (the page's runner, whose runs then never overlap the sweep's timings); without it the sweep starts its own. */
  @property({ attribute: false }) pools?: PoolLender;
  /** Start a sweep whenever config or net change (default); off: only the Run button starts one. */
  @property({ type: Boolean }) autorun = true;

  @state() private report?: SweepReport;
  @state() private progress = '';
  @state() private error = '';
  @state() private running = false;
  @state() private chartPhase: OpPhase = 'forward';
  @query('#gflops') private gflopsSvg?: SVGSVGElement;
  @query('#time') private timeSvg?: SVGSVGElement;
  @query('#speedup') private speedupSvg?: SVGSVGElement;
  private readonly sweeps = new LatestWins();
  private sweptKey = '';

  private key(): string {
    const { tp: _tp, ...sizes } = this.config;
    return JSON.stringify({ sizes, net: this.net });
  }

  protected override willUpdate(changed: PropertyValues<this>): void {
    if (
      this.autorun &&
      (changed.has('config') || changed.has('net') || changed.has('autorun')) &&
      this.key() !== this.sweptKey
    )
      void this.run();
  }

  override disconnectedCallback(): void {
    this.cancel();
    this.sweptKey = '';
    super.disconnectedCallback();
  }

  /** Cancels a running sweep (its own workers are stopped; on borrowed ones the current run stops at its next phase). */
  cancel(): void {
    this.sweeps.cancel(new Error('cancelled'));
  }

  /** Runs the sweep for the current config and net (superseding one in progress). */
  async run(): Promise<void> {
    this.sweptKey = this.key();
    const { run } = gemmDegrees(this.config);
    this.running = true;
    this.error = '';
    this.progress = 'starting…';
    await this.sweeps.run({
      work: (req) =>
        runSweep({
          configs: run.map((tp) => ({ ...this.config, tp })),
          net: this.net === 'measured' ? undefined : this.net,
          signal: req.signal,
          pools: this.pools,
          onProgress: (l) => req.current && (this.progress = l),
        }),
      done: (report) => {
        this.report = report;
        this.progress = '';
      },
      failed: (e, req) => {
        this.error = req.signal.aborted
          ? 'Sweep cancelled.'
          : `The sweep failed: ${e instanceof Error ? e.message : String(e)}`;
        this.progress = '';
        if (!req.signal.aborted) this.sweptKey = '';
      },
      settled: () => (this.running = false),
    });
  }

  private get table(): GemmEfficiency | undefined {
    return this.report && gemmEfficiency(this.report, this.overlap);
  }

  protected override updated(): void {
    const eff = this.table;
    if (!eff || !this.gflopsSvg || !this.timeSvg || !this.speedupSvg) return;
    const degrees = eff.steps.map((s) => s.t);
    const rows = eff.gemms.filter((g) => g.phase === this.chartPhase);
    const series = (v: (d: GemmRow['byDegree'][number]) => number) =>
      rows.map((g, i) => ({
        name: g.name,
        color: seriesColor(i),
        points: g.byDegree.map((d) => ({ t: d.t, v: v(d) })),
      }));
    drawLineChart(this.gflopsSvg, {
      title: `GFLOP/s per ${this.chartPhase} GEMM vs t`,
      yLabel: 'GFLOP/s',
      degrees,
      series: series((d) => d.gflops),
      logY: true,
    });
    drawLineChart(this.timeSvg, {
      title: `Per-rank time per ${this.chartPhase} GEMM vs t`,
      yLabel: 'ms (log)',
      degrees,
      series: series((d) => d.ms),
      logY: true,
    });
    const comm = eff.steps[0]?.comm ?? '';
    drawLineChart(this.speedupSvg, {
      title: 'Step speed-up over t = 1',
      yLabel: 'speed-up',
      degrees,
      series: [
        { name: 'ideal (t)', color: '#888', dashed: true, points: degrees.map((t) => ({ t, v: t / degrees[0] })) },
        { name: 'compute only', color: '#2a6cc4', points: eff.steps.map((s) => ({ t: s.t, v: s.computeSpeedup })) },
        {
          name: `+ comm, ${comm.replace(/^modeled /, '')}`,
          color: '#d0021b',
          points: eff.steps.map((s) => ({ t: s.t, v: s.speedup })),
        },
      ],
    });
  }

  /** The GPU of the chosen system, or undefined when the system does not parse (the machine control names it). */
  private get target(): SystemSpec | undefined {
    try {
      return systemOf(this.system);
    } catch {
      return undefined;
    }
  }

  /** Projected fraction of the dense peak of one local GEMM on the chosen GPU, or undefined. */
  private projected(g: { M: number; N: number; K: number; batch: number }): number | undefined {
    const sys = this.target;
    if (!sys) return undefined;
    try {
      return gemmTime(g, sys.gpu, this.dtype).efficiency;
    } catch {
      return undefined; // a format the GPU lacks: the machine control says so
    }
  }

  private gemmTable(eff: GemmEfficiency): TemplateResult {
    const degrees = eff.steps.map((s) => s.t);
    const gpu = this.target?.gpu.label ?? this.system;
    return html`<table>
      <thead>
        <tr>
          <th>GEMM</th>
          <th>split</th>
          ${degrees.map(
            (t) =>
              html`<th>t=${t}: local M×N×K</th>
                <th class="num">MFLOP</th>
                <th class="num">ms</th>
                <th class="num">GFLOP/s</th>
                <th class="num">vs t=1</th>
                <th class="num" title="the tile- and wave-quantized GEMM model of src/hardware/kernel-time.ts">
                  projected: % of ${gpu} ${this.dtype} peak
                </th>`,
          )}
        </tr>
      </thead>
      <tbody>
        ${eff.gemms.map(
          (g) =>
            html`<tr data-gemm=${g.name} data-split=${g.split}>
              <td>${g.name}${g.phase === 'backward' ? html` <small>(bwd)</small>` : nothing}</td>
              <td>${g.split}</td>
              ${degrees.map((t) => {
                const d = g.byDegree.find((x) => x.t === t);
                if (!d) return html`<td colspan="6">—</td>`;
                const p = this.projected(d);
                return html`<td
                    class="shape"
                    data-gemm=${g.name}
                    data-t=${t}
                    data-m=${d.M}
                    data-n=${d.N}
                    data-k=${d.K}
                    data-batch=${d.batch}
                    data-gflops=${d.gflops}
                  >
                    ${d.batch > 1 ? `${d.batch}× ` : ''}${d.M}×${d.N}×${d.K}
                  </td>
                  <td class="num">${fmt(d.flops / 1e6)}</td>
                  <td class="num">${fmt(d.ms)}</td>
                  <td class="num">${fmt(d.gflops)}</td>
                  <td class="num ${d.efficiency < 0.5 ? 'low' : ''}">${fmt(d.efficiency * 100, 2)}%</td>
                  <td class="num" data-projected=${p ?? ''} data-projected-t=${t} data-projected-gemm=${g.name}>
                    ${p === undefined ? '—' : `${fmt(p * 100, 2)}%`}
                  </td>`;
              })}
            </tr>`,
        )}
      </tbody>
    </table>`;
  }

  private stepTable(eff: GemmEfficiency): TemplateResult {
    return html`<table class="steps">
      <thead>
        <tr>
          <th>t</th>
          <th class="num">compute ms (slowest rank)</th>
          <th class="num">comm ms</th>
          <th class="num">exposed ms</th>
          <th class="num">step ms</th>
          <th class="num">comm share of step</th>
          <th class="num">speed-up</th>
          <th class="num">ideal</th>
        </tr>
      </thead>
      <tbody>
        ${eff.steps.map(
          (s) =>
            html`<tr data-t=${s.t}>
              <td>${s.t}</td>
              <td class="num">${fmt(s.computeMs)}</td>
              <td class="num">${fmt(s.commMs)}</td>
              <td class="num">${fmt(s.exposedMs)}</td>
              <td class="num">${fmt(s.stepMs)}</td>
              <td class="num">${fmt(s.commShare * 100, 2)}%</td>
              <td class="num">${fmt(s.speedup)}×</td>
              <td class="num">${s.t / eff.steps[0].t}×</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
  }

  override render(): TemplateResult {
    const { skipped } = gemmDegrees(this.config);
    const eff = this.table;
    return html`<h2>Local GEMM efficiency vs TP degree</h2>
      <div class="bar">
        <button id="run" @click=${() => void this.run()} ?disabled=${this.running}>Run sweep</button>
        <button id="cancel" @click=${() => this.cancel()} ?disabled=${!this.running}>Cancel</button>
        <label
          >charts:
          <select @change=${(e: Event) => (this.chartPhase = (e.target as HTMLSelectElement).value as OpPhase)}>
            <option value="forward" ?selected=${this.chartPhase === 'forward'}>forward GEMMs</option>
            <option value="backward" ?selected=${this.chartPhase === 'backward'}>backward GEMMs</option>
          </select></label
        >
        <span class="progress" aria-live="polite">${this.progress}</span>
      </div>
      ${skipped.map((s) => html`<p class="skipped" data-skipped-t=${s.t}>t = ${s.t} skipped: ${s.reasons.join(' ')}</p>`)}
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${
        eff
          ? html` <p class="note">
                ${this.report?.note} The projected column is the same local shape on
                ${this.target?.gpu.label ?? this.system} in ${this.dtype} (tile and wave quantization, HBM floor,
                launch), as a fraction of its dense peak; the measured columns are this page's fp32 WebGPU run.
                Column-parallel GEMMs keep M and K and get N/t; row-parallel ones get K/t; attention runs heads/t heads.
                Smaller local GEMMs fill the GPU less, so GFLOP/s falls while the all-reduces stay the size of [s, b,
                h]: the step's speed-up falls behind t (Shoeybi et al. 2019; Narayanan et al. 2021).
              </p>
              <div class="charts"><svg id="gflops"></svg><svg id="time"></svg><svg id="speedup"></svg></div>
              <h3>
                Step (measured compute, communication
                ${this.net === 'measured' ? 'measured here' : `modeled on ${this.net}`}, overlap
                ${this.overlap ? 'on' : 'off'})
              </h3>
              ${this.stepTable(eff)}
              <h3>Every GEMM of the layer</h3>
              <div class="scroll">${this.gemmTable(eff)}</div>`
          : nothing
      }`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-gemm-view': TpGemmView;
  }
}
