// <tp-mesh-controls>: the rank mesh — pipeline stages p, virtual stages v, replicas d, micro-batches m, schedule, distributed optimizer.
import { html, nothing, type TemplateResult } from 'lit';
import { customElement } from 'lit/decorators.js';
import { pipelineScheduleNames } from '../../mesh/pipeline-schedules.ts';
import { maxMeshRanks } from '../../mesh/rank-layout.ts';
import { settingsTable, type Settings } from '../settings/state.ts';
import { SettingsPanel } from './settings-panel.ts';

/** How each schedule is named beside its key. */
const scheduleNames: Record<Settings['schedule'], string> = {
  afab: 'afab: all forwards, then all backwards (GPipe)',
  '1f1b': '1f1b: one forward, one backward (Megatron)',
  interleaved: 'interleaved 1F1B (v ≥ 2 chunks per stage)',
  'zb-h1': 'zb-h1: zero bubble, weight gradients deferred',
};

/**
 * `<tp-mesh-controls>`: the mesh the rank workers run when p > 1 or d > 1 (t × p × d workers, at
 * most maxMeshRanks) and the cluster panel projects (its p and v). Properties down: `settings`,
 * `issues`; events up: `settings-change`, as `<tp-controls>` sends it.
 */
@customElement('tp-mesh-controls')
export class TpMeshControls extends SettingsPanel {
  private number(s: Settings, field: 'pp' | 'vpp' | 'dp' | 'm', label: string): TemplateResult {
    return html`<label
        >${label}
        <input
          type="number"
          min="1"
          step="1"
          data-control=${field}
          aria-invalid=${this.invalid(field)}
          .value=${String(s[field])}
          @change=${(e: Event) => {
            try {
              this.emit({ ...s, [field]: settingsTable[field].parse((e.target as HTMLInputElement).value) }, field);
            } catch (err) {
              this.refuse(field, err);
            }
          }}
      /></label>
      ${this.errorsFor(field)}`;
  }

  protected override render() {
    const s = this.settings;
    if (!s) return nothing;
    return html`<fieldset>
      <legend>Rank mesh</legend>
      <p class="hint">
        p &gt; 1 or d &gt; 1 runs t × p × d rank workers (at most ${maxMeshRanks}): a pipeline of L layers on
        m micro-batches per replica, checked against one device.
      </p>
      ${this.number(s, 'pp', 'pipeline stages p')} ${this.number(s, 'vpp', 'virtual stages per rank v')}
      ${this.number(s, 'dp', 'data-parallel replicas d')} ${this.number(s, 'm', 'micro-batches per replica m')}
      <label
        >schedule
        <select
          data-control="schedule"
          aria-invalid=${this.invalid('schedule')}
          @change=${(e: Event) =>
            this.emit({ ...s, schedule: (e.target as HTMLSelectElement).value as Settings['schedule'] }, 'schedule')}
        >
          ${pipelineScheduleNames.map(
            (n) => html`<option value=${n} ?selected=${n === s.schedule}>${scheduleNames[n]}</option>`,
          )}
        </select></label
      >
      ${this.errorsFor('schedule')}
      <label class="check"
        ><input
          type="checkbox"
          data-control="distopt"
          .checked=${s.distopt}
          @change=${(e: Event) => this.emit({ ...s, distopt: (e.target as HTMLInputElement).checked }, 'distopt')}
        />
        distributed optimizer (ZeRO-1: reduce-scatter, Adam on a shard, all-gather)</label
      >
      ${this.errorsFor('distopt')}
    </fieldset>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-mesh-controls': TpMeshControls;
  }
}
