// <tp-controls>: every setting of the page; emits `settings-change` and shows each issue next to its control.
import { html, nothing, type TemplateResult } from 'lit';
import { customElement, property, state } from 'lit/decorators.js';
import { parseWhole } from '../../parallel/config-parse.ts';
import { presetNames, type PresetName } from '../../parallel/config.ts';
import { legalTpDegrees } from '../../parallel/validate.ts';
import { legalTpOverlapChunks } from '../../parallel/tp-overlap.ts';
import { customInterconnect, interconnectNames, interconnectPresets } from '../../hardware/interconnect.ts';
import type { ControlField, FieldIssue } from '../settings/field-issues.ts';
import { fieldMessages } from '../settings/settings-change.ts';
import { passViews, settingsTable, sizeKeys, withPreset, type Settings } from '../settings/state.ts';
import { renderMoeControls } from './moe-controls.ts';
import { fieldErrorParagraphs } from './field-errors.ts';
import { SettingsPanel } from './settings-panel.ts';

import type { SettingsChangeDetail } from '../settings/settings-change.ts';

/** Labels of the size controls, in Megatron's words. */
const sizeLabels: Record<(typeof sizeKeys)[number], string> = {
  s: 'sequence s',
  b: 'micro-batch b',
  h: 'hidden h',
  heads: 'heads',
  groups: 'query groups',
  ffn: 'FFN hidden',
  vocab: 'vocab (0 = none)',
};

/** The degrees every select offers, legal or not: the ones a class asks about first. */
const usualDegrees = [1, 2, 4, 8];

/**
 * `<tp-controls>`: TP degree (legal degrees and any number), SP, preset and each size, pass,
 * interconnect (measured here, a preset, or custom α and bandwidth), overlap. Properties down:
 * `settings`, `issues` (each shown in a `[data-error-for=field]` line under its control). Events
 * up: `settings-change` with {settings, field}. A number that does not parse is refused here with
 * its message and emits nothing.
 */
@customElement('tp-controls')
export class TpControls extends SettingsPanel {
  /** Information to show next to their controls (KV replication, vocabulary padding, SP at t = 1). */
  @property({ attribute: false }) notes: readonly FieldIssue[] = [];
  /** The link chosen while comm is measured, so switching to modeled restores it. */
  @state() private lastLink = 'pcie-gen3';

  /** Parses a whole-number input; on failure shows the message under it and returns undefined. */
  private whole(field: ControlField, text: string, min: number): number | undefined {
    try {
      return parseWhole(field, text, min);
    } catch (e) {
      this.refuse(field, e);
      return undefined;
    }
  }

  /** Parses an input with its settings row; on failure shows the message under it and returns undefined. */
  private parsed<K extends keyof Settings>(field: K, text: string): Settings[K] | undefined {
    try {
      return settingsTable[field].parse(text);
    } catch (e) {
      this.refuse(field, e);
      return undefined;
    }
  }

  protected override errorsFor(field: ControlField): TemplateResult | typeof nothing {
    const notes = this.notes.filter((n) => n.field === field).map((n) => this.note(field, n.message));
    const msgs = fieldMessages(field, this.issues, this.local);
    if (!msgs.length && !notes.length) return nothing;
    return html`${notes}${fieldErrorParagraphs(field, msgs)}`;
  }

  /** A note folded after its first clause ("2 query groups < t = 8: …"), so long notes do not push the controls down. */
  private note(field: ControlField, message: string): TemplateResult {
    const cut = message.search(/[:.;] /);
    if (cut < 0) return html`<p class="hint" data-note-for=${field}>${message}</p>`;
    return html`<details class="hint" data-note-for=${field}>
      <summary>${message.slice(0, cut + 1)}</summary>
      ${message.slice(cut + 2)}
    </details>`;
  }

  protected override render() {
    const s = this.settings;
    if (!s) return nothing;
    return html`
      ${this.renderDegree(s)} ${this.renderModel(s)}
      ${renderMoeControls(
        {
          emit: (x, f) => this.emit(x, f),
          parsed: (f, t) => this.parsed(f, t),
          errorsFor: (f) => this.errorsFor(f),
          invalid: (f) => this.invalid(f),
        },
        s,
      )}
      ${this.renderComm(s)}
      <fieldset>
        <legend>Show</legend>
        <label
          >pass
          <select
            data-control="pass"
            @change=${(e: Event) => this.emit({ ...s, pass: (e.target as HTMLSelectElement).value as Settings['pass'] }, 'pass')}
          >
            ${passViews.map((p) => html`<option value=${p} ?selected=${p === s.pass}>${p === 'both' ? 'forward + backward' : p}</option>`)}
          </select></label
        >
        ${this.errorsFor('pass')} ${this.errorsFor('view')}
      </fieldset>
    `;
  }

  private renderDegree(s: Settings): TemplateResult {
    const legal = legalTpDegrees(s, s.sp, 16);
    const options = [...new Set([...usualDegrees, ...legal])].sort((a, b) => a - b);
    return html`<fieldset>
      <legend>Tensor parallel</legend>
      <label
        >TP degree t
        <select
          data-control="tp"
          aria-invalid=${this.invalid('tp')}
          @change=${(e: Event) => this.emit({ ...s, tp: Number((e.target as HTMLSelectElement).value) }, 'tp')}
        >
          ${options.includes(s.tp) ? nothing : html`<option value=${s.tp} selected>${s.tp}</option>`}
          ${options.map((t) => html`<option value=${t} ?selected=${t === s.tp}>${t}${legal.includes(t) ? '' : ' (not legal here)'}</option>`)}
        </select></label
      >
      <label
        >any t
        <input
          type="number"
          min="1"
          max="64"
          data-control="tp-number"
          .value=${String(s.tp)}
          aria-invalid=${this.invalid('tp')}
          @change=${(e: Event) => {
            const v = this.whole('tp', (e.target as HTMLInputElement).value, 1);
            if (v !== undefined) this.emit({ ...s, tp: v }, 'tp');
          }}
      /></label>
      <p class="hint">legal here: ${legal.join(', ')}</p>
      ${this.errorsFor('tp')}
      <label class="check"
        ><input
          type="checkbox"
          data-control="sp"
          .checked=${s.sp}
          @change=${(e: Event) => this.emit({ ...s, sp: (e.target as HTMLInputElement).checked }, 'sp')}
        />
        sequence parallel (SP)</label
      >
      ${this.errorsFor('sp')}
      <label
        class="check"
        title="Under SP the norm weights see different tokens on each rank; Megatron-LM all-reduces their gradients over the TP group in finalize_model_grads (_allreduce_non_tensor_model_parallel_grads; Korthikanti et al. 2022). Without it they silently drift, and the oracle flags them."
        ><input
          type="checkbox"
          data-control="skipnorm"
          .checked=${s.skipSpNormGradAllReduce}
          ?disabled=${!s.sp || s.tp === 1}
          @change=${(e: Event) => this.emit({ ...s, skipSpNormGradAllReduce: (e.target as HTMLInputElement).checked }, 'sp')}
        />
        demo: skip the SP all-reduce of the norm-weight gradients</label
      >
    </fieldset>`;
  }

  private renderModel(s: Settings): TemplateResult {
    return html`<fieldset>
      <legend>Model</legend>
      <label
        >preset
        <select
          data-control="preset"
          @change=${(e: Event) => this.emit(withPreset(s, (e.target as HTMLSelectElement).value as PresetName), 'preset')}
        >
          ${presetNames.map((p) => html`<option value=${p} ?selected=${p === s.preset}>${p}</option>`)}
        </select></label
      >
      ${this.errorsFor('preset')}
      <div class="sizes">
        ${sizeKeys.map(
          (k) =>
            html`<label
                >${sizeLabels[k]}
                <input
                  type="number"
                  min=${k === 'vocab' ? 0 : 1}
                  data-control=${k}
                  .value=${String(s[k])}
                  aria-invalid=${this.invalid(k)}
                  @change=${(e: Event) => {
                    const v = this.whole(k, (e.target as HTMLInputElement).value, k === 'vocab' ? 0 : 1);
                    if (v !== undefined) this.emit({ ...s, [k]: v }, k);
                  }}
              /></label>
              ${this.errorsFor(k)}`,
        )}
      </div>
    </fieldset>`;
  }

  private renderComm(s: Settings): TemplateResult {
    const measured = s.net === 'measured';
    const link = measured ? this.lastLink : s.net;
    const custom = /^custom:([^:]+):([^:]+)$/.exec(link);
    const [alpha, bw] = custom ? [custom[1], custom[2]] : ['5', '25'];
    const setLink = (net: string): void => {
      this.lastLink = net;
      this.emit({ ...s, net }, 'net');
    };
    const setCustom = (a: string, b: string): void => {
      try {
        customInterconnect(Number(a), Number(b));
        setLink(`custom:${Number(a)}:${Number(b)}`);
      } catch (e) {
        this.refuse('net', e);
      }
    };
    return html`<fieldset>
      <legend>Communication times</legend>
      ${s.machine === 'custom' ? nothing : html`<p class="hint" data-note-for="net">Used by the custom machine only (see Machine).</p>`}
      <label class="check"
        ><input
          type="radio"
          name="comm"
          data-control="comm-measured"
          .checked=${measured}
          @change=${() => this.emit({ ...s, net: 'measured' }, 'net')}
        />
        measured here (this browser's transport)</label
      >
      <label class="check"
        ><input
          type="radio"
          name="comm"
          data-control="comm-modeled"
          .checked=${!measured}
          @change=${() => this.emit({ ...s, net: link }, 'net')}
        />
        modeled interconnect (alpha-beta ring)</label
      >
      <label
        >link
        <select
          data-control="net"
          ?disabled=${measured}
          aria-invalid=${this.invalid('net')}
          @change=${(e: Event) => {
            const v = (e.target as HTMLSelectElement).value;
            setLink(v === 'custom' ? `custom:${alpha}:${bw}` : v);
          }}
        >
          ${interconnectNames.map((n) => html`<option value=${n} ?selected=${n === link}>${interconnectPresets[n].label}</option>`)}
          <option value="custom" ?selected=${!!custom}>custom α and bandwidth</option>
        </select></label
      >
      ${
        custom && !measured
          ? html`<label
                >α per ring step (µs)
                <input
                  type="number"
                  min="0"
                  step="any"
                  data-control="alpha"
                  .value=${alpha}
                  @change=${(e: Event) => setCustom((e.target as HTMLInputElement).value, bw)}
              /></label>
              <label
                >bus bandwidth (GB/s)
                <input
                  type="number"
                  min="0"
                  step="any"
                  data-control="bandwidth"
                  .value=${bw}
                  @change=${(e: Event) => setCustom(alpha, (e.target as HTMLInputElement).value)}
              /></label>`
          : nothing
      }
      ${this.errorsFor('net')}
      <label class="check"
        ><input
          type="checkbox"
          data-control="overlap"
          .checked=${s.overlap}
          @change=${(e: Event) => this.emit({ ...s, overlap: (e.target as HTMLInputElement).checked }, 'overlap')}
        />
        overlap the dgrad all-reduce with wgrad (Megatron async)</label
      >
      ${this.errorsFor('overlap')}
      <label
        >TP comm overlap (MLP)
        <select
          data-control="tpoverlap"
          aria-invalid=${this.invalid('tpOverlapChunks')}
          @change=${(e: Event) =>
            this.emit({ ...s, tpOverlapChunks: Number((e.target as HTMLSelectElement).value) }, 'tpOverlapChunks')}
        >
          ${[
            ...new Set([1, ...legalTpOverlapChunks({ ...s, tp: Math.max(2, s.tp) }).slice(0, 4), s.tpOverlapChunks]),
          ].map(
            (c) =>
              html`<option value=${c} ?selected=${c === s.tpOverlapChunks}>${c === 1 ? 'off' : `${c} chunks`}</option>`,
          )}
        </select></label
      >
      ${this.errorsFor('tpOverlapChunks')}
    </fieldset>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'tp-controls': TpControls;
  }
  interface HTMLElementEventMap {
    'settings-change': CustomEvent<SettingsChangeDetail>;
  }
}
