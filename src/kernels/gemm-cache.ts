import { gemmVariants, type GemmVariant } from './gemm-variants.ts';

/**
 * FNV-1a (32-bit) of every variant's WGSL source, entry point, override constants and tile, as 8
 * hex digits: a tuning decision is kept only for the kernels it was measured on, so a changed
 * kernel re-tunes.
 */
export function gemmKernelHash(): string {
  const text = Object.values(gemmVariants)
    .map((v) =>
      [v.name, v.entryPoint, JSON.stringify(v.constants), v.tileM, v.tileN, v.code, v.staged?.pack ?? ''].join(
        '\u0000',
      ),
    )
    .join('\u0001');
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** Tuning decisions kept across page loads or CLI runs: "hash|adapter|shapeClass" → variant. */
export type StoredGemmChoices = Record<string, GemmVariant>;

/** Where decisions persist: IndexedDB in the page, a JSON file for the CLI. */
export interface GemmChoiceStore {
  load(): Promise<StoredGemmChoices>;
  /** Adds or replaces these entries (others are kept). */
  save(entries: StoredGemmChoices): Promise<void>;
}

/** The store key of one decision. */
export function gemmStoreKey(adapter: string, shapeClass: string, hash = gemmKernelHash()): string {
  return `${hash}|${adapter}|${shapeClass}`;
}

/**
 * The stored decisions for this adapter and the current kernels, as [shapeClass, variant] (what
 * importGemmChoices takes); entries of other kernels, other adapters or unknown variants are left out.
 */
export function storedChoicesFor(stored: unknown, adapter: string, hash = gemmKernelHash()): [string, GemmVariant][] {
  if (typeof stored !== 'object' || stored === null) return [];
  const prefix = `${hash}|${adapter}|`;
  return Object.entries(stored)
    .filter(([k, v]) => k.startsWith(prefix) && typeof v === 'string' && v in gemmVariants)
    .map(([k, v]) => [k.slice(prefix.length), v as GemmVariant]);
}

/** The entries to store for choices [shapeClass, variant] made on `adapter` with the current kernels. */
export function toStoredChoices(
  adapter: string,
  choices: readonly [string, GemmVariant][],
  hash = gemmKernelHash(),
): StoredGemmChoices {
  return Object.fromEntries(choices.map(([cls, v]) => [gemmStoreKey(adapter, cls, hash), v]));
}
