// System files loaded on the page (docs/calibrate.md): a calibrated or hand-written machine, chosen as
// the settings' system by `file:NAME`. They live in this tab only; the hash names them.
import { parseSystem, type SystemSpec } from '../../hardware/systems.ts';

/** The settings' system value for a loaded file. */
export const systemFilePrefix = 'file:';

const loaded = new Map<string, SystemSpec>();

/** Keeps `system` (read from the file `name`) for this tab and returns the settings value that chooses it. */
export function loadSystemFile(name: string, system: SystemSpec): string {
  loaded.set(name, system);
  return `${systemFilePrefix}${name}`;
}

/** The loaded file a settings value names, or undefined for a catalog or custom system. */
export function loadedSystemFile(value: string): SystemSpec | undefined {
  return value.startsWith(systemFilePrefix) ? loaded.get(value.slice(systemFilePrefix.length)) : undefined;
}

/**
 * The system of a settings value: a loaded file (`file:NAME`), else parseSystem's catalog name or
 * custom:…. Throws for a file this tab has not loaded (a link opened elsewhere, a reload).
 */
export function systemOf(value: string): SystemSpec {
  if (!value.startsWith(systemFilePrefix)) return parseSystem(value);
  const name = value.slice(systemFilePrefix.length);
  const system = loaded.get(name);
  if (!system)
    throw new Error(
      `the system file ${name} is not loaded in this tab: load it again (Machine → system file), or choose a catalog system.`,
    );
  return system;
}
