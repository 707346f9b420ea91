// The Mixture-of-Experts fieldset of <tp-controls>: MoE preset, E, k, f_moe, EP, ETP, capacity,
// dispatcher, shared expert, score function, aux loss, router skew and the M036 demonstration.
import { html, nothing, type TemplateResult } from 'lit';
import type { ControlField } from '../settings/field-issues.ts';
import {
  legalEp,
  legalEtp,
  moeOn,
  moeRanks,
  moePresetNames,
  moePresetOf,
  moePresets,
  pageRanksDispatch,
  withMoePreset,
  type MoePresetName,
} from '../settings/moe-settings.ts';
import { scoreFunctions, settingsTable, type Settings } from '../settings/state.ts';
import { tokenDispatchers } from '../../megatron/moe.ts';

/** What the fieldset needs of its panel: emit a change, parse an input (undefined: refused, message shown), and a control's messages and state. */
export interface MoeControlsHost {
  emit(settings: Settings, field: ControlField): void;
  parsed<K extends keyof Settings>(field: K, text: string): Settings[K] | undefined;
  errorsFor(field: ControlField): TemplateResult | typeof nothing;
  invalid(field: ControlField): 'true' | 'false';
}

/** Number inputs of the fieldset: field, label, and the hash text an input's value becomes. */
const numberRows: readonly { field: 'experts' | 'topk' | 'moeFfn' | 'sharedFfn' | 'aux' | 'skew'; label: string }[] = [
  { field: 'experts', label: 'experts E (0 = dense MLP)' },
  { field: 'topk', label: 'top-k' },
  { field: 'moeFfn', label: 'expert FFN (0 = FFN hidden)' },
  { field: 'sharedFfn', label: 'shared expert FFN (0 = none)' },
  { field: 'aux', label: 'aux-loss coefficient' },
  { field: 'skew', label: 'router skew (not Megatron)' },
];

/** A select of the usual degrees and the legal ones, each marked when it would not pass here. */
function degreeSelect(
  host: MoeControlsHost,
  s: Settings,
  field: 'ep' | 'etp',
  legal: readonly number[],
): TemplateResult {
  const options = [
    ...new Set([...Array.from({ length: s.tp }, (_, i) => i + 1).filter((d) => s.tp % d === 0), s[field]]),
  ];
  return html`<select
    data-control=${field}
    aria-invalid=${host.invalid(field)}
    @change=${(e: Event) => host.emit({ ...s, [field]: Number((e.target as HTMLSelectElement).value) }, field)}
  >
    ${options.map((d) => html`<option value=${d} ?selected=${d === s[field]}>${d}${legal.includes(d) ? '' : ' (not legal here)'}</option>`)}
  </select>`;
}

/** The MoE fieldset: every row emits `settings-change` with its field; its issues sit under it. */
export function renderMoeControls(host: MoeControlsHost, s: Settings): TemplateResult {
  const on = moeOn(s);
  const preset = moePresetOf(s);
  const input = (field: (typeof numberRows)[number]['field'], label: string): TemplateResult =>
    html`<label
        >${label}
        <input
          type="number"
          min="0"
          step=${field === 'aux' || field === 'skew' ? 'any' : '1'}
          data-control=${field}
          .value=${String(s[field])}
          aria-invalid=${host.invalid(field)}
          @change=${(e: Event) => {
            const v = host.parsed(field, (e.target as HTMLInputElement).value);
            if (v !== undefined) host.emit({ ...s, [field]: v }, field);
          }}
      /></label>
      ${host.errorsFor(field)}`;
  return html`<fieldset data-moe>
    <legend>Mixture of Experts</legend>
    <label
      >MoE preset
      <select
        data-control="moe-preset"
        @change=${(e: Event) => host.emit(withMoePreset(s, (e.target as HTMLSelectElement).value as MoePresetName), 'experts')}
      >
        ${preset ? nothing : html`<option value="" selected>custom</option>`}
        ${moePresetNames.map((n) => html`<option value=${n} ?selected=${n === preset}>${moePresets[n].label}</option>`)}
      </select></label
    >
    ${numberRows.slice(0, 1).map((r) => input(r.field, r.label))}
    ${
      on
        ? html`${numberRows.slice(1, 4).map((r) => input(r.field, r.label))}
          <label>EP ${degreeSelect(host, s, 'ep', legalEp(s))}</label>
          ${host.errorsFor('ep')}
          <label>ETP ${degreeSelect(host, s, 'etp', legalEtp(s))}</label>
          ${host.errorsFor('etp')}
          <p class="hint" data-note-for="moe-ranks">
            ${moeRanks(s)} ranks: attention t = ${s.tp} × DP ${moeRanks(s) / s.tp}, experts ETP ${s.etp} × EP ${s.ep} ×
            EDP ${moeRanks(s) / (s.etp * s.ep)}; ${s.experts / s.ep} experts a rank
          </p>
          <label class="check"
            ><input
              type="checkbox"
              data-control="capacity-on"
              .checked=${s.capacity !== null}
              @change=${(e: Event) => host.emit({ ...s, capacity: (e.target as HTMLInputElement).checked ? 1 : null }, 'capacity')}
            />
            drop tokens over capacity</label
          >
          ${
            s.capacity === null
              ? nothing
              : html`<label
                  >capacity factor
                  <input
                    type="number"
                    min="0"
                    step="any"
                    data-control="capacity"
                    .value=${String(s.capacity)}
                    aria-invalid=${host.invalid('capacity')}
                    @change=${(e: Event) => {
                      const v = host.parsed('capacity', (e.target as HTMLInputElement).value);
                      if (v !== undefined) host.emit({ ...s, capacity: v }, 'capacity');
                    }}
                /></label>`
          }
          ${host.errorsFor('capacity')}
          <label
            >dispatcher
            <select
              data-control="dispatcher"
              @change=${(e: Event) =>
                host.emit(
                  { ...s, dispatcher: settingsTable.dispatcher.parse((e.target as HTMLSelectElement).value) },
                  'dispatcher',
                )}
            >
              ${tokenDispatchers.map(
                (d) =>
                  html`<option value=${d} ?selected=${d === s.dispatcher}>
                    ${d}${pageRanksDispatch(d) ? '' : ' (cluster only)'}
                  </option>`,
              )}
            </select></label
          >
          ${host.errorsFor('dispatcher')}
          <label
            >router scores
            <select
              data-control="score"
              @change=${(e: Event) => host.emit({ ...s, score: settingsTable.score.parse((e.target as HTMLSelectElement).value) }, 'score')}
            >
              ${scoreFunctions.map((f) => html`<option value=${f} ?selected=${f === s.score}>${f}</option>`)}
            </select></label
          >
          ${host.errorsFor('score')} ${numberRows.slice(4).map((r) => input(r.field, r.label))}
          <label
            class="check"
            title="Seed 002 M036: without SP every TP rank holds the same tokens and routes them again, so one logical token is sent t times. Megatron-LM refuses MoE with TP > 1 and no --sequence-parallel in training (moe_layer.py)."
            ><input
              type="checkbox"
              data-control="m036"
              .checked=${s.moeNoSp}
              ?disabled=${s.tp === 1}
              @change=${(e: Event) => host.emit({ ...s, moeNoSp: (e.target as HTMLInputElement).checked }, 'moeNoSp')}
            />
            demo: the MoE region without SP (M036)</label
          >`
        : // a link's bad value of a hidden row is still shown
          (['topk', 'moeFfn', 'sharedFfn', 'ep', 'etp', 'capacity', 'dispatcher', 'score', 'aux', 'skew'] as const).map(
            (f) => host.errorsFor(f),
          )
    }
    ${host.errorsFor('moeNoSp')}
  </fieldset>`;
}
