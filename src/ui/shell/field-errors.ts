// The messages under a control, as every controls panel draws them.
import { html, nothing, type TemplateResult } from 'lit';
import type { ControlField, FieldIssue } from '../settings/field-issues.ts';
import { fieldMessages } from '../settings/settings-change.ts';

/** The error paragraphs under `field` (fieldMessages: the page's issues naming it, then the panel's own parse error). */
export function fieldErrorParagraphs(field: ControlField, messages: readonly string[]): TemplateResult[] {
  return messages.map((m) => html`<p class="error" role="alert" data-error-for=${field}>${m}</p>`);
}

/** fieldErrorParagraphs of fieldMessages, or nothing when there is none. */
export function fieldErrors(
  field: ControlField,
  issues: readonly FieldIssue[],
  local: Partial<Record<ControlField, string>>,
): TemplateResult | typeof nothing {
  const msgs = fieldMessages(field, issues, local);
  return msgs.length ? html`${fieldErrorParagraphs(field, msgs)}` : nothing;
}
