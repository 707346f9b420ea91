import type { CollectiveCall } from './call.ts';
import type { CollectiveOp, ReduceOp } from './collectives.ts';

/** Most ranks one shared ring serves. */
export const maxSabRanks = 16;
const fpWords = 32;
/** Words 15.. of a fingerprint hold the tensor name's UTF-8 bytes, 4 per word. */
const nameWords = fpWords - 15;
/** Longest tensor name kept in a fingerprint (longer names are compared on this prefix). */
export const maxFingerprintNameBytes = nameWords * 4;

/**
 * Int32 word offsets in the control buffer: [0] abort code (0 = none, r+1 = rank r failed,
 * −1 = pool aborted), arrive[r] = last seq rank r reached, progress[r] = ring steps rank r has
 * finished, then fingerprints double-buffered by seq parity: slot(p, r) of `fpWords` words;
 * [1] the byte length of the abort reason (UTF-8) stored after the last word.
 */
export const ctrl = {
  abort: 0,
  reasonBytes: 1,
  arrive: (r: number): number => 16 + r,
  progress: (r: number): number => 16 + maxSabRanks + r,
  fp: (seq: number, r: number): number => 16 + 2 * maxSabRanks + ((seq & 1) * maxSabRanks + r) * fpWords,
  words: 16 + 2 * maxSabRanks + 2 * maxSabRanks * fpWords,
} as const;

/**
 * The shared memory of one group: a control block, and one shared WebAssembly.Memory holding each
 * rank's ring slot at byte offset r·capacityBytes (one memory, so a SIMD kernel can reduce across slots).
 */
export interface SabRing {
  readonly control: SharedArrayBuffer;
  readonly memory: WebAssembly.Memory;
  /** Bytes of each rank's slot: the largest full tensor a collective may move. */
  readonly capacityBytes: number;
}

/** Allocates the shared memory for `size` ranks with `capacityBytes` per rank (pages commit on first touch). */
export function createSabRing(size: number, capacityBytes: number): SabRing {
  if (size > maxSabRanks) throw new Error(`createSabRing: at most ${maxSabRanks} ranks, got ${size}.`);
  const cap = Math.max(16, Math.ceil(capacityBytes / 16) * 16);
  const pages = Math.ceil((cap * size) / 65536);
  if (pages > 65536)
    throw new Error(`createSabRing: ${size} slots of ${cap} bytes exceed the 4 GiB of one WebAssembly memory.`);
  return {
    control: new SharedArrayBuffer(ctrl.words * 4 + maxReasonBytes),
    memory: new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true }),
    capacityBytes: cap,
  };
}

const maxReasonBytes = 1024;

/** Makes every rank blocked in the ring throw: code r+1 blames rank r, −1 the pool; `reason` says why. */
export function abortSabRing(ring: SabRing, code: number, reason = ''): void {
  const c = new Int32Array(ring.control);
  if (Atomics.load(c, ctrl.abort) !== 0) return;
  const bytes = new TextEncoder().encode(reason).subarray(0, maxReasonBytes);
  new Uint8Array(ring.control, ctrl.words * 4, maxReasonBytes).set(bytes);
  Atomics.store(c, ctrl.reasonBytes, bytes.length);
  Atomics.compareExchange(c, ctrl.abort, 0, code);
  for (let i = 0; i < ctrl.words; i++) Atomics.notify(c, i);
}

/** The reason given to abortSabRing ('' when none). */
export function sabAbortReason(control: SharedArrayBuffer): string {
  const n = Atomics.load(new Int32Array(control), ctrl.reasonBytes);
  return new TextDecoder().decode(new Uint8Array(control, ctrl.words * 4, n).slice());
}

const ops: CollectiveOp[] = ['allReduce', 'reduceScatter', 'allGather', 'broadcast', 'barrier', 'ringExchange'];
const reduceOps: ReduceOp[] = ['sum', 'max'];

/**
 * Writes `call` as int32 words at `at`: seq, op, reduceOp+1, dim+1, root+1, ndim, dims[0..8],
 * then the tensor name's byte length + 1 (0 = unnamed) and its UTF-8 bytes.
 */
export function writeFingerprint(words: Int32Array, at: number, call: CollectiveCall): void {
  words[at] = call.seq;
  words[at + 1] = ops.indexOf(call.op);
  words[at + 2] = call.reduceOp === undefined ? 0 : reduceOps.indexOf(call.reduceOp) + 1;
  words[at + 3] = call.dim === undefined ? 0 : call.dim + 1;
  words[at + 4] = call.root === undefined ? 0 : call.root + 1;
  words[at + 5] = call.shape.length;
  call.shape.forEach((d, i) => (words[at + 6 + i] = d));
  const name = call.tensor === undefined ? undefined : encoder.encode(call.tensor).subarray(0, maxFingerprintNameBytes);
  words[at + 14] = name === undefined ? 0 : name.length + 1;
  if (name === undefined) return;
  const packed = new Uint8Array(nameWords * 4);
  packed.set(name);
  words.set(new Int32Array(packed.buffer), at + 15);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Reads a call written by writeFingerprint. */
export function readFingerprint(words: Int32Array, at: number): CollectiveCall {
  const nd = words[at + 5];
  return {
    seq: words[at],
    op: ops[words[at + 1]],
    dtype: 'f32',
    shape: Array.from(words.subarray(at + 6, at + 6 + nd)),
    ...(words[at + 2] && { reduceOp: reduceOps[words[at + 2] - 1] }),
    ...(words[at + 3] && { dim: words[at + 3] - 1 }),
    ...(words[at + 4] && { root: words[at + 4] - 1 }),
    ...(words[at + 14] && { tensor: readName(words, at, words[at + 14] - 1) }),
  };
}

/**
 * Whether the fingerprints at `a` and `b` describe the same call, word for word over the words
 * writeFingerprint set (dims up to ndim, name bytes up to its length): the common case costs a
 * few integer compares, and only a mismatch needs readFingerprint for its message.
 */
export function sameFingerprint(words: Int32Array, a: number, b: number): boolean {
  for (let i = 0; i < 6; i++) if (words[a + i] !== words[b + i]) return false;
  for (let i = 6; i < 6 + words[a + 5]; i++) if (words[a + i] !== words[b + i]) return false;
  if (words[a + 14] !== words[b + 14]) return false;
  const nameEnd = 15 + Math.ceil(Math.max(0, words[a + 14] - 1) / 4);
  for (let i = 15; i < nameEnd; i++) if (words[a + i] !== words[b + i]) return false;
  return true;
}

function readName(words: Int32Array, at: number, bytes: number): string {
  const packed = new Int32Array(words.subarray(at + 15, at + 15 + nameWords));
  return decoder.decode(new Uint8Array(packed.buffer, 0, bytes));
}
