// A list-valued Megatron flag of submodule names (--recompute-modules, --offload-modules), parsed
// as its argparse nargs="*" reads it, with the config's assertion on the choices.
import { quoted } from '../core/quote.ts';

/**
 * `text` ("a b" or "a,b") as names of `choices`, duplicates dropped; an empty list is refused with
 * `empty`, an unknown name quoted with the choices and the assertion's line `source`.
 */
export function parseModuleList<T extends string>(
  flag: string,
  text: string,
  choices: readonly T[],
  source: string,
  empty: string,
): T[] {
  const names = text.split(/[\s,]+/).filter(Boolean);
  if (!names.length) throw new Error(empty);
  for (const n of names)
    if (!(choices as readonly string[]).includes(n))
      throw new Error(`${flag} ${quoted(n)}: Megatron asserts the choices (${source}): ${choices.join(', ')}.`);
  return [...new Set(names)] as T[];
}
