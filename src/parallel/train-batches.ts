import type { StepInputs } from './layer.ts';

/** The 32 characters of the classroom's character-level vocabulary (vocab = 32): id = index. */
export const charVocab = " abcdefghijklmnopqrstuvwxyz.,;'?";

/** What characters outside the vocabulary become: line breaks and dashes a space, ! a ., : a ;, " a '. */
const fold: Record<string, string> = { '\n': ' ', '-': ' ', '!': '.', ':': ';', '"': "'" };

/** Token ids of `text`: lower-cased, folded onto charVocab; any other character is an error naming it. */
export function encodeChars(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const ch = fold[text[i]] ?? text[i].toLowerCase();
    const id = charVocab.indexOf(ch);
    if (id < 0)
      throw new Error(`encodeChars: "${text[i]}" at ${i} is not in the vocabulary "${charVocab}"; remove or fold it.`);
    out[i] = id;
  }
  return out;
}

/** Ids back to text (for showing a batch). */
export function decodeChars(ids: ArrayLike<number>): string {
  return Array.from(ids, (i) => charVocab[i] ?? '�').join('');
}

/**
 * Step k's batch of next-character prediction in Megatron's [s, b] layout: sequence j of the b
 * starts at ((k·b + j)·s) mod (n − s − 1) of the text, so consecutive steps walk through it;
 * ids[i·b + j] = text[start_j + i], targets[i·b + j] = text[start_j + i + 1]. Every degree of a
 * run sees the same batches.
 */
export function charBatch(
  tokens: Uint8Array,
  k: number,
  s: number,
  b: number,
): Required<Pick<StepInputs, 'ids' | 'targets'>> {
  const span = tokens.length - s - 1;
  if (span <= 0)
    throw new Error(`charBatch: the text has ${tokens.length} characters; s = ${s} needs at least ${s + 2}.`);
  const ids = new Float32Array(s * b),
    targets = new Float32Array(s * b);
  for (let j = 0; j < b; j++) {
    const start = ((k * b + j) * s) % span;
    for (let i = 0; i < s; i++) {
      ids[i * b + j] = tokens[start + i];
      targets[i * b + j] = tokens[start + i + 1];
    }
  }
  return { ids, targets };
}
