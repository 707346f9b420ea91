// The `settings-change` event that the control panels send up to <tp-app>, and the messages shown under a control.
import type { ControlField, FieldIssue } from './field-issues.ts';
import type { Settings } from './state.ts';

/** Detail of `settings-change`: the new settings and the control that changed them. */
export interface SettingsChangeDetail {
  readonly settings: Settings;
  readonly field: ControlField;
}

/** The `settings-change` event a control panel dispatches (bubbles out of its shadow root). */
export function settingsChangeEvent(settings: Settings, field: ControlField): CustomEvent<SettingsChangeDetail> {
  return new CustomEvent<SettingsChangeDetail>('settings-change', {
    detail: { settings, field },
    bubbles: true,
    composed: true,
  });
}

/** The messages to show under `field`: the page's issues that name it, then the panel's own parse error. */
export function fieldMessages(
  field: ControlField,
  issues: readonly FieldIssue[],
  local: Partial<Record<ControlField, string>>,
): string[] {
  const own = local[field];
  return [...issues.filter((i) => i.field === field).map((i) => i.message), ...(own ? [own] : [])];
}
