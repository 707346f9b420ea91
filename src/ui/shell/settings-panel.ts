// The base of the page's controls panels (<tp-controls>, <tp-machine-controls>, <tp-mesh-controls>):
// settings and issues down, each input's own parse error kept under it, `settings-change` up.
import { LitElement, type nothing, type TemplateResult } from 'lit';
import { property, state } from 'lit/decorators.js';
import type { ControlField, FieldIssue } from '../settings/field-issues.ts';
import { settingsChangeEvent } from '../settings/settings-change.ts';
import type { Settings } from '../settings/state.ts';
import { controlStyles, panelStyles } from '../shared/page-style.ts';
import { fieldErrors } from './field-errors.ts';

/** A controls panel: shows `settings`, each of `issues` under the control it names, and emits `settings-change`. */
export abstract class SettingsPanel extends LitElement {
  static override styles = [panelStyles, controlStyles];

  /** The settings shown. */
  @property({ attribute: false }) settings: Settings | undefined;
  /** Messages to show next to their controls (validation errors, bad hash values). */
  @property({ attribute: false }) issues: readonly FieldIssue[] = [];
  /** Local parse errors of inputs, by control. */
  @state() protected local: Partial<Record<ControlField, string>> = {};

  protected emit(settings: Settings, field: ControlField): void {
    // Re-render only to clear a shown parse error: a re-render now would put back the old value until the new settings arrive.
    if (this.local[field]) this.local = { ...this.local, [field]: undefined };
    this.dispatchEvent(settingsChangeEvent(settings, field));
  }

  /** Keeps `err`'s message (or `err` itself, a string) under the control of `field`; nothing is emitted. */
  protected refuse(field: ControlField, err: unknown): void {
    this.local = { ...this.local, [field]: err instanceof Error ? err.message : String(err) };
  }

  /** The messages under `field`'s control: the page's issues naming it, then the panel's own parse error. */
  protected errorsFor(field: ControlField): TemplateResult | typeof nothing {
    return fieldErrors(field, this.issues, this.local);
  }

  /** `aria-invalid` of `field`'s control: an issue names it or its text did not parse. */
  protected invalid(field: ControlField): 'true' | 'false' {
    return this.issues.some((i) => i.field === field) || this.local[field] ? 'true' : 'false';
  }
}
