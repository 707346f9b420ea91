// The cluster-model fieldset of <tp-machine-controls>: a scenario, a built-in Hugging Face config or one pasted or dropped, what the reader said of it, and the cluster's EP and ETP for a mixture of experts.
import { html, nothing, type TemplateResult } from 'lit';
import { quoted } from '../../core/quote.ts';
import type { HfModel } from '../../megatron/hf-config.ts';
import { clusterModelChoices, clusterModelName, hfPasted } from '../settings/cluster-model-choice.ts';
import { clusterModelOf, type ClusterModelSpec } from '../settings/cluster-model.ts';
import type { ControlField } from '../settings/field-issues.ts';
import { checkPastedLength, keepPastedConfig, pastedConfigText } from '../settings/pasted-hf-config.ts';
import { padRanksNote } from '../settings/moe-settings.ts';
import { settingsTable, type Settings } from '../settings/state.ts';
import { tokenDispatchers } from '../../megatron/moe.ts';
import { settingSwitch, type SettingsHost } from './setting-switch.ts';

/** What the fieldset needs of its panel: emit a change, keep a refusal under a control, and a control's messages. */
export interface ClusterModelHost extends SettingsHost {
  refuse(field: ControlField, message: string): void;
}

/** Unknown fields named in full before the rest are counted. */
const namedUnknown = 8;

/** What the reader said of a config: the fields it does not know (named, each cut), and its notes. */
function readerWords(hf: HfModel): TemplateResult {
  const unknown = hf.unknownFields;
  const named = unknown.slice(0, namedUnknown).map((f) => quoted(f));
  return html`${
    unknown.length
      ? html`<p class="hint" data-note-for="hf-unknown">
          config.json fields not read (unknown here; nothing is taken from them): ${named.join(', ')}${
            unknown.length > namedUnknown ? ` and ${unknown.length - namedUnknown} more` : ''
          }. If one sets a size, write it under the field name this reader knows (docs/hf-config.md).
        </p>`
      : nothing
  }
    <details class="hint" data-note-for="hf-notes">
      <summary>how the config is read (${hf.notes.length} notes)</summary>
      <ul>
        ${hf.notes.map((n) => html`<li>${n}</li>`)}
      </ul>
    </details>`;
}

/** Reads `text` as a config.json (the CLI's reader), keeps it in this tab and chooses it; a refusal stays under the control. */
function usePasted(host: ClusterModelHost, s: Settings, text: string): void {
  try {
    keepPastedConfig(text);
    host.emit({ ...s, cmodel: hfPasted }, 'cmodel');
  } catch (e) {
    host.refuse('cmodel', `config.json: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** A picked or dropped file: refused by its size before it is read, else read as pasted text. */
async function useFile(host: ClusterModelHost, s: Settings, file: File | undefined): Promise<void> {
  if (!file) return;
  try {
    checkPastedLength(file.size, `the file ${quoted(file.name)}`);
  } catch (e) {
    host.refuse('cmodel', e instanceof Error ? e.message : String(e));
    return;
  }
  usePasted(host, s, await file.text());
}

/** EP or ETP of the cluster, a number parsed by its settings row (the same setting as the MoE block's). */
function degree(host: ClusterModelHost, s: Settings, field: 'ep' | 'etp', label: string): TemplateResult {
  return html`<label
      >${label}
      <input
        type="number"
        min="1"
        step="1"
        data-control=${`cluster-${field}`}
        .value=${String(s[field])}
        @change=${(e: Event) => {
          try {
            host.emit({ ...s, [field]: settingsTable[field].parse((e.target as HTMLInputElement).value) }, field);
          } catch (err) {
            host.refuse(field, err instanceof Error ? err.message : String(err));
          }
        }}
    /></label>
    ${host.errorsFor(field)}`;
}

/** A MoE text row of the cluster (capacity, imb), parsed by its settings row; a refusal stays under it. */
function moeText(host: ClusterModelHost, s: Settings, field: 'capacity' | 'imb', label: string): TemplateResult {
  const row = settingsTable[field];
  return html`<label
      >${label}
      <input
        type="text"
        data-control=${`cluster-${field}`}
        .value=${field === 'capacity' ? settingsTable.capacity.format(s.capacity) : settingsTable.imb.format(s.imb)}
        @change=${(e: Event) => {
          try {
            host.emit({ ...s, [field]: row.parse((e.target as HTMLInputElement).value) }, field);
          } catch (err) {
            host.refuse(field, err instanceof Error ? err.message : String(err));
          }
        }}
    /></label>
    ${host.errorsFor(field)}`;
}

/**
 * The cluster's MoE flags: for a config's experts the dispatcher (all three, flex the projection's only)
 * and capacity factor (the MoE block's settings too) and grouped GEMM; for any MoE model the padding to
 * capacity (the page's own ranks do not pad: padRanksNote says so under it), the two overlaps and the
 * load-imbalance what-if.
 */
function moeFlagControls(host: ClusterModelHost, s: Settings, config: boolean): TemplateResult {
  const padNote = padRanksNote(s);
  return html`${
    config
      ? html`<label
            >token dispatcher
            <select
              data-control="cluster-dispatcher"
              @change=${(e: Event) =>
                host.emit(
                  { ...s, dispatcher: settingsTable.dispatcher.parse((e.target as HTMLSelectElement).value) },
                  'dispatcher',
                )}
            >
              ${tokenDispatchers.map((d) => html`<option value=${d} ?selected=${d === s.dispatcher}>${d}</option>`)}
            </select></label
          >
          ${host.errorsFor('dispatcher')} ${moeText(host, s, 'capacity', 'capacity factor (off = dropless)')}
          ${settingSwitch(host, s, 'gg', '--moe-grouped-gemm')}`
      : nothing
  }
  ${settingSwitch(host, s, 'pad', '--moe-pad-expert-input-to-capacity')}
  ${padNote ? html`<p class="hint" data-note-for="pad">${padNote}</p>` : nothing}
  ${settingSwitch(host, s, 'epov', '--overlap-moe-expert-parallel-comm')}
  ${settingSwitch(host, s, 'seov', '--moe-shared-expert-overlap')}
  ${moeText(host, s, 'imb', 'load imbalance (busiest EP rank / mean; what-if)')}`;
}

/**
 * The fieldset: the cluster-model select (scenarios, built-in configs as `hf:NAME`, the pasted one,
 * the page's layer), a text area to paste a config.json into and a file input (or drop a file on
 * the text area), what the reader made of the chosen config, and EP and ETP when the model has
 * experts. Every refusal sits under the select.
 */
export function renderClusterModelControls(host: ClusterModelHost, s: Settings): TemplateResult {
  let model: ClusterModelSpec | undefined;
  try {
    model = clusterModelOf(s);
  } catch {
    // clusterModelIssues puts why under the select.
  }
  const kept = pastedConfigText() !== undefined;
  return html`<fieldset data-cluster-model-controls>
    <legend>Cluster model</legend>
    <label
      >cluster model
      <select
        data-control="cmodel"
        @change=${(e: Event) =>
          host.emit({ ...s, cmodel: (e.target as HTMLSelectElement).value as Settings['cmodel'] }, 'cmodel')}
      >
        ${clusterModelChoices
          .filter((c) => c !== hfPasted || kept || s.cmodel === hfPasted)
          .map((c) => html`<option value=${c} ?selected=${c === s.cmodel}>${clusterModelName(c)}</option>`)}
      </select></label
    >
    <label class="block"
      >paste a Hugging Face config.json (or drop the file here)
      <textarea
        rows="3"
        spellcheck="false"
        data-control="hf-config"
        placeholder='{"model_type": "mixtral", "hidden_size": 4096, …}'
        @change=${(e: Event) => {
          const text = (e.target as HTMLTextAreaElement).value;
          if (text.trim()) usePasted(host, s, text);
        }}
        @dragover=${(e: DragEvent) => e.preventDefault()}
        @drop=${(e: DragEvent) => {
          e.preventDefault();
          void useFile(host, s, e.dataTransfer?.files[0]);
        }}
      ></textarea>
    </label>
    <label class="block"
      >or pick the config.json file
      <input
        type="file"
        accept=".json,application/json"
        data-control="hf-config-file"
        @change=${(e: Event) => void useFile(host, s, (e.target as HTMLInputElement).files?.[0])}
    /></label>
    ${host.errorsFor('cmodel')}
    ${
      model?.hf
        ? html`<p class="hint" data-note-for="hf-defaults">${model.from}.</p>
            ${readerWords(model.hf)}`
        : nothing
    }
    ${
      model?.moe && s.cmodel !== 'layer'
        ? html`<p class="hint">
              EP, ETP, the dispatcher and the capacity factor of every row: the page's ep, etp, dispatcher and capacity,
              the MoE block's on the ranks too (one setting each); the advisor's apply sets EP and ETP and keeps the rest.
            </p>
            ${degree(host, s, 'ep', 'expert parallel EP')}
            ${degree(host, s, 'etp', 'expert tensor parallel ETP')}`
        : nothing
    }
    ${
      model?.moe
        ? moeFlagControls(host, s, s.cmodel !== 'layer')
        : // a link's bad value of a hidden row is still shown
          (['gg', 'pad', 'epov', 'seov', 'imb'] as const).map((f) => host.errorsFor(f))
    }
  </fieldset>`;
}
