import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { machineChoice } from '../../../../src/ui/settings/machine-choice.ts';
import { defaultSettings, hashFromSettings, settingsFromHash } from '../../../../src/ui/settings/state.ts';
import { loadSystemFile, loadedSystemFile, systemOf } from '../../../../src/ui/settings/system-files.ts';

describe('system files loaded on the page', () => {
  it('a loaded file is chosen by file:NAME, round-trips through the hash, and is the machine', () => {
    const mine = { ...systems['dgx-h100'], name: 'mine', label: 'My cluster' };
    const value = loadSystemFile('mine.json', mine);
    expect(value).toBe('file:mine.json');
    expect(systemOf(value)).toBe(mine);
    expect(loadedSystemFile(value)).toBe(mine);
    expect(loadedSystemFile('dgx-h100')).toBeUndefined();
    expect(systemOf('dgx-h100')).toBe(systems['dgx-h100']);
    const s = { ...defaultSettings, system: value, dtype: 'bf16' as const };
    expect(settingsFromHash(hashFromSettings(s)).settings.system).toBe(value);
    const m = machineChoice(s);
    expect(m.issues).toEqual([]);
    expect(m.projection?.system.label).toBe('My cluster');
  });

  it('a file this tab has not loaded (a shared link, a reload) is named by the system control', () => {
    const s = { ...defaultSettings, system: 'file:elsewhere.json' };
    expect(settingsFromHash(hashFromSettings(s)).settings.system).toBe('file:elsewhere.json');
    expect(machineChoice(s).issues).toEqual([
      {
        field: 'system',
        message:
          'the system file elsewhere.json is not loaded in this tab: load it again (Machine → system file), or choose a catalog system.',
      },
    ]);
  });
});
