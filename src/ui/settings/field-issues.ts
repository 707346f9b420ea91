// Which control each validation message is shown next to (pure, no DOM).
import { hasControl, type Settings } from './state.ts';

/** A control of <tp-controls>: a settings key. */
export type ControlField = keyof Settings;

/** A message to show next to one control. */
export interface FieldIssue {
  readonly field: ControlField;
  readonly message: string;
}

/**
 * Places each issue next to a control: the one the user just changed when the issue involves it
 * (an illegal t shows under the TP control even though the rule names heads first), else the
 * issue's own `field`; fields without a control (seed, ε, RoPE base) go to the preset.
 */
export function placeIssues(
  issues: readonly { readonly field: string; readonly fields: readonly string[]; readonly message: string }[],
  changed?: ControlField,
): FieldIssue[] {
  return issues.map((i) => {
    const involved = changed !== undefined && i.fields.includes(changed);
    const field = involved ? changed : hasControl(i.field) ? i.field : 'preset';
    return { field, message: i.message };
  });
}
