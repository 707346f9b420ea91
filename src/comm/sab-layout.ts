import type { CollectiveCall, Splits } from './call.ts';
import type { CollectiveOp, ReduceOp } from './collectives.ts';
import type { P2PCall } from './p2p.ts';

/** Most ranks one shared ring serves. */
export const maxSabRanks = 16;
const fpWords = 32;
/** Words 15.. of a fingerprint hold the tensor name's UTF-8 bytes, 4 per word. */
const nameWords = fpWords - 15;
/** Longest tensor name kept in a fingerprint (longer names are compared on this prefix). */
export const maxFingerprintNameBytes = nameWords * 4;

const fpBase = 16 + 2 * maxSabRanks;
const p2pBase = fpBase + 2 * maxSabRanks * fpWords;
/** Words of one point-to-point channel: messages sent, messages taken, the last message's fingerprint. */
const p2pWords = 2 + fpWords;
const splitBase = p2pBase + maxSabRanks * maxSabRanks * p2pWords;

/**
 * Int32 word offsets in the control buffer: [0] abort code (0 = none, r+1 = rank r failed,
 * −1 = pool aborted), arrive[r] = last seq rank r reached, progress[r] = ring steps rank r has
 * finished, then fingerprints double-buffered by seq parity: slot(p, r) of `fpWords` words, then
 * one point-to-point channel per ordered pair (from, to): [sent, taken, fingerprint], then an
 * all-to-all's splits per rank, double-buffered by seq parity like the fingerprints: send[0..16),
 * recv[0..16); [1] the byte length of the abort reason (UTF-8) stored after the last word.
 */
export const ctrl = {
  abort: 0,
  reasonBytes: 1,
  arrive: (r: number): number => 16 + r,
  progress: (r: number): number => 16 + maxSabRanks + r,
  fp: (seq: number, r: number): number => fpBase + ((seq & 1) * maxSabRanks + r) * fpWords,
  p2pSent: (from: number, to: number): number => p2pBase + (from * maxSabRanks + to) * p2pWords,
  p2pTaken: (from: number, to: number): number => p2pBase + (from * maxSabRanks + to) * p2pWords + 1,
  p2pFp: (from: number, to: number): number => p2pBase + (from * maxSabRanks + to) * p2pWords + 2,
  splits: (seq: number, r: number): number => splitBase + ((seq & 1) * maxSabRanks + r) * 2 * maxSabRanks,
  words: splitBase + 2 * maxSabRanks * 2 * maxSabRanks,
} as const;

/**
 * The shared memory of one group: a control block, and one shared WebAssembly.Memory holding each
 * rank's ring slot at byte offset r·capacityBytes (one memory, so a SIMD kernel can reduce across
 * slots), then one point-to-point buffer per ordered pair (from, to) of p2pCapacityBytes at
 * size·capacityBytes + (from·size + to)·p2pCapacityBytes.
 */
export interface SabRing {
  readonly control: SharedArrayBuffer;
  readonly memory: WebAssembly.Memory;
  /** Bytes of each rank's slot: the largest full tensor a collective may move. */
  readonly capacityBytes: number;
  /** Bytes of each point-to-point buffer: the largest tensor a send may move. */
  readonly p2pCapacityBytes: number;
}

/**
 * Allocates the shared memory for `size` ranks with `capacityBytes` per rank and `p2pCapacityBytes`
 * per ordered pair (default: min(capacityBytes, 1 MiB)); pages commit on first touch.
 */
export function createSabRing(size: number, capacityBytes: number, p2pCapacityBytes?: number): SabRing {
  if (size > maxSabRanks) throw new Error(`createSabRing: at most ${maxSabRanks} ranks, got ${size}.`);
  const round = (b: number): number => Math.max(16, Math.ceil(b / 16) * 16);
  const cap = round(capacityBytes);
  const p2p = round(p2pCapacityBytes ?? Math.min(capacityBytes, 1 << 20));
  const pages = Math.ceil((cap * size + p2p * size * size) / 65536);
  if (pages > 65536)
    throw new Error(
      `createSabRing: ${size} slots of ${cap} bytes and ${size * size} point-to-point buffers of ${p2p} bytes exceed the 4 GiB of one WebAssembly memory.`,
    );
  return {
    control: new SharedArrayBuffer(ctrl.words * 4 + maxReasonBytes),
    memory: new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true }),
    capacityBytes: cap,
    p2pCapacityBytes: p2p,
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

const ops: CollectiveOp[] = [
  'allReduce',
  'reduceScatter',
  'allGather',
  'broadcast',
  'barrier',
  'ringExchange',
  'allToAll',
];
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
  writeName(words, at, call.tensor);
}

/** Words 14.. at `at`: the name's byte length + 1 (0 = unnamed), then its UTF-8 bytes (cut to maxFingerprintNameBytes). */
function writeName(words: Int32Array, at: number, tensor: string | undefined): void {
  const name = tensor === undefined ? undefined : encoder.encode(tensor).subarray(0, maxFingerprintNameBytes);
  words[at + 14] = name === undefined ? 0 : name.length + 1;
  if (name === undefined) return;
  const packed = new Uint8Array(nameWords * 4);
  packed.set(name);
  words.set(new Int32Array(packed.buffer), at + 15);
}

/**
 * Writes a point-to-point message's fingerprint at `at` in the fingerprint's word layout: seq,
 * from, to, (unused), (unused), ndim, dims[0..8], then the tensor name as writeFingerprint does.
 */
export function writeP2PFingerprint(words: Int32Array, at: number, call: P2PCall): void {
  words.fill(0, at, at + 6 + 8);
  words[at] = call.seq;
  words[at + 1] = call.from;
  words[at + 2] = call.to;
  words[at + 5] = call.shape.length;
  call.shape.forEach((d, i) => (words[at + 6 + i] = d));
  writeName(words, at, call.tensor);
}

/** Reads a message's fingerprint written by writeP2PFingerprint (a name longer than the slot comes back cut). */
export function readP2PFingerprint(words: Int32Array, at: number): P2PCall {
  return {
    seq: words[at]!,
    from: words[at + 1]!,
    to: words[at + 2]!,
    dtype: 'f32',
    shape: Array.from(words.subarray(at + 6, at + 6 + words[at + 5]!)),
    ...(words[at + 14] && { tensor: readName(words, at, words[at + 14]! - 1) }),
  };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Writes an all-to-all's splits at `at` (ctrl.splits): send counts, then recv counts, maxSabRanks words each. */
export function writeSplits(words: Int32Array, at: number, s: Splits): void {
  words.set(s.send, at);
  words.set(s.recv, at + maxSabRanks);
}

/** Reads the splits of a group of `size` written by writeSplits. */
export function readSplits(words: Int32Array, at: number, size: number): Splits {
  return {
    send: Array.from(words.subarray(at, at + size)),
    recv: Array.from(words.subarray(at + maxSabRanks, at + maxSabRanks + size)),
  };
}

/** Reads a call written by writeFingerprint (without an all-to-all's splits: readSplits). */
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

/** A message's fingerprint as the receiver reads it back (a name longer than the slot cut). */
export function storedP2P(call: P2PCall): P2PCall {
  const words = new Int32Array(fpWords);
  writeP2PFingerprint(words, 0, call);
  return readP2PFingerprint(words, 0);
}
