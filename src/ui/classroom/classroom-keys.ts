// The classroom's presenter keys (pure): what a key press does to the slides.

/** What a key does: move, jump to an end, or toggle presenter mode. */
export type SlideAction = 'next' | 'prev' | 'first' | 'last' | 'present';

/**
 * The action of `key` (KeyboardEvent.key) pressed on an element named `tag` (an input's `type`
 * beside): → ↓ PageDown Space next, ← ↑ PageUp previous, Home / End the first / last step, F
 * presenter mode (full screen). Keys typed into a text field or a list do nothing; Space and Enter
 * on a button or a check box press it instead.
 */
export function slideAction(key: string, tag: string, type = ''): SlideAction | undefined {
  const toggle = tag === 'BUTTON' || (tag === 'INPUT' && /^(checkbox|radio)$/.test(type));
  if (/^(SELECT|TEXTAREA)$/.test(tag) || (tag === 'INPUT' && !toggle)) return undefined;
  if (toggle && (key === ' ' || key === 'Enter')) return undefined;
  switch (key) {
    case 'ArrowRight':
    case 'ArrowDown':
    case 'PageDown':
    case ' ':
      return 'next';
    case 'ArrowLeft':
    case 'ArrowUp':
    case 'PageUp':
      return 'prev';
    case 'Home':
      return 'first';
    case 'End':
      return 'last';
    case 'f':
    case 'F':
      return 'present';
    default:
      return undefined;
  }
}
