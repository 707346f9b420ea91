// An on/off setting as a labelled checkbox with its messages under it, for every controls panel.
import { html, type nothing, type TemplateResult } from 'lit';
import type { ControlField } from '../settings/field-issues.ts';
import type { Settings } from '../settings/state.ts';

/** What a control needs of its panel: emit a change, and a control's messages. */
export interface SettingsHost {
  emit(settings: Settings, field: ControlField): void;
  errorsFor(field: ControlField): TemplateResult | typeof nothing;
}

/** The boolean settings a panel draws as a switch. */
export type SwitchField = 'gg' | 'epov' | 'seov' | 'pad' | 'ogr' | 'opg' | 'fp8pg' | 'cpuov' | 'p2pov';

/** `field` as a checkbox labelled `label` (a Megatron flag), its messages under it. */
export function settingSwitch(host: SettingsHost, s: Settings, field: SwitchField, label: string): TemplateResult {
  return html`<label class="check"
      ><input
        type="checkbox"
        data-control=${field}
        .checked=${s[field]}
        @change=${(e: Event) => host.emit({ ...s, [field]: (e.target as HTMLInputElement).checked }, field)}
      />
      ${label}</label
    >
    ${host.errorsFor(field)}`;
}
