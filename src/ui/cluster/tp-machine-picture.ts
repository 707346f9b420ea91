// <tp-machine-picture>: the machine's topology with the ranks placed on it, each link's load per step, placements switchable.
import { LitElement, css, html, nothing, type PropertyValues } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { systemTopology } from '../../hardware/topology-catalog.ts';
import { budgetDegrees, resolveGlobalBatch } from '../../megatron/global-batch.ts';
import { projectStep } from '../../projection/step/cluster-projection.ts';
import { parsePlacement, placementLabels, placementNames, processGroups } from '../../projection/links/placement.ts';
import { kindLabels } from '../../projection/links/placement-links.ts';
import { placementStep, type PlacementStep } from '../../projection/studies/placement-step.ts';
import { afterNextPaint } from '../shared/next-paint.ts';
import { panelStyles } from '../shared/page-style.ts';
import { systemOf } from '../settings/system-files.ts';
import { formatMs } from '../../core/format.ts';
import { clusterModelOf, clusterModelSetup } from '../settings/cluster-model.ts';
import { LatestWins } from '../../session/latest-wins.ts';
import { settingsChangeEvent } from '../settings/settings-change.ts';
import type { Settings } from '../settings/state.ts';
import { drawMachine, kindColors } from './machine-drawing.ts';

/** Links the table lists (the heaviest by exposed bytes per step). */
const linksListed = 8;

/** The step of each named placement, for the buttons. */
type StepByPlacement = ReadonlyMap<string, number>;

/**
 * `<tp-machine-picture>`: the cluster panel's model at the page's t on the machine's topology
 * (src/hardware/topology-catalog.ts): sockets, PCIe switches, GPUs coloured by TP group, NICs,
 * NVLink, nodes (beyond two summarized); each link's width its bytes per step under the placement
 * (placement-step.ts), its colour the group kind that loads it most. The placement buttons set
 * the page's `placement` setting and show each one's projected step.
 */
@customElement('tp-machine-picture')
export class TpMachinePicture extends LitElement {
  static override styles = [
    panelStyles,
    css`
      svg {
        width: 100%;
        max-width: 1000px;
        height: auto;
        display: block;
      }
      .placements {
        display: flex;
        flex-wrap: wrap;
        gap: 8px;
        margin: 8px 0;
      }
      button[aria-pressed='true'] {
        background: #0b2b55;
        color: #fff;
      }
      .swatch {
        display: inline-block;
        width: 12px;
        height: 12px;
        border-radius: 2px;
        margin: 0 4px 0 12px;
        vertical-align: -1px;
      }
    `,
  ];

  /** The page's settings: the cluster panel's model (cmodel, sizes), machine, L, N, global batch, t and placement. */
  @property({ attribute: false }) settings: Settings | undefined;
  @state() private result: PlacementStep | undefined;
  @state() private steps: StepByPlacement = new Map();
  @state() private plainMs = 0;
  @state() private error = '';
  @state() private customText = '';
  private readonly projections = new LatestWins();

  /** The inputs of the projection, as one key: the picture re-projects when it changes. */
  private inputKey = '';

  protected override willUpdate(changed: PropertyValues<this>): void {
    const s = this.settings;
    if (!changed.has('settings') || !s) return;
    let model: unknown;
    try {
      model = clusterModelSetup(clusterModelOf(s));
    } catch (e) {
      model = String(e);
    }
    const key = JSON.stringify([model, s.system, s.dtype, s.gpus, s.gbatch, s.overlap, s.tp, s.placement]);
    if (key !== this.inputKey) {
      this.inputKey = key;
      void this.project(s);
    }
  }

  private async project(s: Settings): Promise<void> {
    await this.projections.run({
      work: async (req) => {
        await afterNextPaint();
        req.signal.throwIfAborted();
        const model = clusterModelOf(s);
        const sizes = model.sizes;
        const system = systemOf(s.system);
        const node = systemTopology(system);
        const machine = { system, dtype: s.dtype };
        const { tp: t, gpus } = s;
        if (gpus % t !== 0) throw new Error(`t = ${t} does not divide the ${gpus} GPUs of the budget.`);
        const setup = {
          ...clusterModelSetup(model),
          // MoE with t > 1 needs SP (moe_layer.py:629-632): priced with it, as the cluster panel's SP rows are.
          sp: model.moe !== undefined && t > 1,
          gpus,
          globalBatch: resolveGlobalBatch(s.gbatch, sizes.b, gpus, budgetDegrees(gpus)),
          overlap: s.overlap,
          tp: t,
        };
        const result = await placementStep(setup, machine, node, parsePlacement(s.placement, node, gpus));
        const steps = new Map<string, number>();
        for (const name of placementNames)
          steps.set(
            name,
            name === s.placement
              ? result.step.stepMs
              : (await placementStep(setup, machine, node, parsePlacement(name, node, gpus))).step.stepMs,
          );
        const plainMs = (await projectStep(setup, machine)).stepMs;
        return { result, steps, plainMs };
      },
      done: ({ result, steps, plainMs }) => Object.assign(this, { result, steps, plainMs, error: '' }),
      failed: (e) => {
        this.error = e instanceof Error ? e.message : String(e);
        this.result = undefined;
      },
    });
  }

  protected override updated(): void {
    const r = this.result;
    const svg = this.renderRoot.querySelector<SVGSVGElement>('svg[data-machine]');
    if (!r || !svg) return;
    const node = systemTopology(r.step.machine.system);
    const gpus = r.step.setup.gpus;
    const tpGroupOf: number[] = [];
    processGroups(r.step.degrees, r.placement.order).tp.forEach((g, i) => {
      for (const rank of g) tpGroupOf[rank] = i;
    });
    drawMachine(svg, {
      node,
      nodes: Math.ceil(gpus / node.gpus),
      gpuOf: r.placement.gpuOf,
      tpGroupOf,
      loads: r.loads,
    });
  }

  private choose(placement: string): void {
    const s = this.settings;
    if (s && placement !== s.placement) this.dispatchEvent(settingsChangeEvent({ ...s, placement }, 'placement'));
  }

  protected override render() {
    const s = this.settings;
    if (!s) return nothing;
    const r = this.result;
    const d = r?.step.degrees;
    const gpus = r?.step.setup.gpus ?? s.gpus;
    return html`<h2>Machine and rank placement</h2>
      ${this.error ? html`<p class="error" role="alert" data-machine-error>${this.error}</p>` : nothing}
      <div class="placements" role="group" aria-label="rank placement">
        ${placementNames.map(
          (name) =>
            html`<button
              type="button"
              data-placement=${name}
              aria-pressed=${String(s.placement === name)}
              @click=${() => this.choose(name)}
            >
              ${placementLabels[name]}${this.steps.has(name) ? html` · <span>${formatMs(this.steps.get(name)!)}</span>` : nothing}
            </button>`,
        )}
        <label
          >custom
          <input
            data-placement-custom
            size="18"
            placeholder="0,4,1,5,2,6,3,7"
            .value=${s.placement.startsWith('custom:') ? s.placement.slice(7) : this.customText}
            @change=${(e: Event) => {
              this.customText = (e.target as HTMLInputElement).value.trim();
              this.choose(`custom:${this.customText}`);
            }}
        /></label>
      </div>
      ${
        r && d
          ? html`<p class="note" data-placement-step=${r.placement.name} data-step-ms=${r.step.stepMs}>
                t = ${d.tp}, DP ${d.dp} on ${gpus} GPUs: step <strong>${formatMs(r.step.stepMs)}</strong> with
                ${r.placement.label} (${formatMs(this.plainMs)} with the catalog's one link per group).
                ${r.volumes.map(
                  (v) =>
                    html`<span class="swatch" style="background:${kindColors[v.kind]}"></span
                      >${r.priced[v.kind].link.label}, ${v.callsPerStep} calls per step,
                      ${(100 * v.exposedShare).toFixed(0)}% exposed.`,
                )}
              </p>
              <svg data-machine></svg>
              <p class="note">
                GPUs coloured by TP group, labelled with the rank on them; each link's width is the bytes it carries
                per step (both directions), its colour the group that loads it most; hover a link for its load.
                Capacities: NCCL's topology constants (PCIe, NVLink, sockets) and the seeds' measured cross-socket
                7.6 GB/s; a projection, not a measurement (docs/topology.md).
              </p>
              <table data-link-load>
                <thead>
                  <tr>
                    <th>link (per step)</th>
                    <th class="num">GB/s</th>
                    <th class="num">MB</th>
                    <th class="num">exposed MB</th>
                    <th>groups</th>
                  </tr>
                </thead>
                <tbody>
                  ${r.loads.slice(0, linksListed).map(
                    (l) =>
                      html`<tr>
                        <td>${gpus > r.step.machine.system.gpusPerNode ? `node ${l.link.node}: ` : ''}${l.link.label}</td>
                        <td class="num">${l.link.capacityGBps.toPrecision(3)}</td>
                        <td class="num">${(l.totalBytesPerStep / 1e6).toFixed(1)}</td>
                        <td class="num">${(l.exposedBytesPerStep / 1e6).toFixed(1)}</td>
                        <td>
                          ${Object.keys(l.bytesPerStep)
                            .map((k) => kindLabels[k as keyof typeof kindLabels])
                            .join(', ')}
                        </td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
          : nothing
      }`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-machine-picture': TpMachinePicture;
  }
}
