import { describe, expect, test } from 'vitest';
import { presets } from '../../../../src/parallel/config.ts';
import {
  commOf,
  configOf,
  defaultSettings,
  hasControl,
  hashKeys,
  runKey,
  settingKeys,
  settingsTable,
  type SettingField,
  hashFromSettings,
  settingsFromHash,
  withPreset,
  type Settings,
} from '../../../../src/ui/settings/state.ts';

describe('settingsFromHash', () => {
  test('an empty hash gives the defaults and no messages', () => {
    expect(settingsFromHash('')).toEqual({ settings: defaultSettings, messages: [] });
    expect(settingsFromHash('#')).toEqual({ settings: defaultSettings, messages: [] });
  });

  test('#tp=1 sets one rank and keeps every other default', () => {
    const { settings, messages } = settingsFromHash('#tp=1');
    expect(settings).toEqual({ ...defaultSettings, tp: 1 });
    expect(messages).toEqual([]);
  });

  test('a preset sets its sizes and explicit size keys override them', () => {
    const { settings } = settingsFromHash('#preset=llama-gqa&heads=16&tp=8');
    expect(settings).toMatchObject({ ...presets['llama-gqa'], preset: 'llama-gqa', heads: 16, tp: 8 });
  });

  test('an unknown key is ignored with a message naming the keys', () => {
    const { settings, messages } = settingsFromHash('#tp=4&colour=red');
    expect(settings.tp).toBe(4);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ key: 'colour' });
    expect(messages[0].message).toMatch(/unknown key "colour".*preset, s, b, h/);
  });

  test('a malformed value keeps the default and says what was expected', () => {
    const { settings, messages } = settingsFromHash(
      '#tp=two&sp=maybe&preset=gpt5&net=carrier-pigeon&pass=sideways&view=3d&h=-4',
    );
    expect(settings).toEqual(defaultSettings);
    const byKey = Object.fromEntries(messages.map((m) => [m.key, m.message]));
    expect(Object.keys(byKey).sort()).toEqual(['h', 'net', 'pass', 'preset', 'sp', 'tp', 'view']);
    expect(byKey.tp).toMatch(/tp must be a whole number ≥ 1, got "two"\. Using tp=2\./);
    expect(byKey.preset).toMatch(/unknown preset "gpt5"; presets are classroom/);
    expect(byKey.net).toMatch(/unknown interconnect "carrier-pigeon"/);
    expect(byKey.pass).toMatch(/pass must be one of forward, backward, both/);
  });

  test('a custom interconnect with a bad bandwidth is refused with its message', () => {
    const { settings, messages } = settingsFromHash('#net=custom:5:0');
    expect(settings.net).toBe(defaultSettings.net);
    expect(messages[0].message).toMatch(/bandwidth \(0 GB\/s\) must be a finite number > 0/);
  });

  test('an illegal degree is not a parse error: validation reports it next to its control', () => {
    const { settings, messages } = settingsFromHash('#tp=3');
    expect(settings.tp).toBe(3);
    expect(messages).toEqual([]);
  });
});

describe('hashFromSettings', () => {
  const cases: Settings[] = [
    defaultSettings,
    { ...defaultSettings, tp: 1 },
    {
      ...withPreset(defaultSettings, 'llama-gqa'),
      tp: 8,
      sp: true,
      net: 'custom:2.5:25',
      overlap: false,
      pass: 'backward',
      view: 'gemm',
    },
    { ...withPreset(defaultSettings, 'gpt2-layer'), heads: 24, s: 64, net: 'measured' },
    { ...defaultSettings, sp: true, skipSpNormGradAllReduce: true },
  ];
  test.each(cases.map((s) => [hashFromSettings(s), s] as const))(
    '%s round-trips through settingsFromHash',
    (hash, s) => {
      expect(settingsFromHash(hash)).toEqual({ settings: s, messages: [] });
    },
  );

  test('sizes equal to the preset are left out and a custom link stays readable', () => {
    expect(hashFromSettings(defaultSettings)).toBe(
      '#preset=classroom&tp=2&sp=0&net=pcie-gen3&overlap=1&pass=both&view=timeline',
    );
    expect(hashFromSettings({ ...defaultSettings, heads: 8, net: 'custom:5:25' })).toBe(
      '#preset=classroom&heads=8&tp=2&sp=0&net=custom:5:25&overlap=1&pass=both&view=timeline',
    );
  });
});

describe('configOf and commOf', () => {
  test('the configuration carries the sizes, degree and SP of the settings', () => {
    const c = configOf({ ...withPreset(defaultSettings, 'llama-gqa'), tp: 4, sp: true, heads: 16 });
    expect(c).toMatchObject({ ...presets['llama-gqa'], heads: 16, tp: 4, sp: true });
  });

  test('measured stays measured and a preset or custom net becomes its interconnect', () => {
    expect(commOf('measured')).toBe('measured');
    expect(commOf('nvlink-a100')).toMatchObject({ name: 'nvlink-a100', busGBps: 240 });
    expect(commOf('custom:4:12.5')).toMatchObject({ name: 'custom', alphaUs: 4, busGBps: 12.5 });
  });
});

test('the skipnorm key turns on the SP norm-gradient skip demonstration in the layer config', () => {
  const { settings, messages } = settingsFromHash('#tp=2&sp=1&skipnorm=1');
  expect(messages).toEqual([]);
  expect(configOf(settings).skipSpNormGradAllReduce).toBe(true);
  expect(configOf(defaultSettings).skipSpNormGradAllReduce).toBe(false);
  expect(hashFromSettings(defaultSettings)).not.toContain('skipnorm');
});

describe('the settings table', () => {
  test('every row reads back what it writes, its default included', () => {
    for (const k of settingKeys) {
      const row = settingsTable[k] as SettingField<unknown>;
      expect(row.parse(row.format(defaultSettings[k])), k).toEqual(defaultSettings[k]);
    }
  });

  test('#slow=2:3 reads as rank 2 at factor 3, re-runs the layer, and is written only when set', () => {
    const { settings, messages } = settingsFromHash('#tp=4&slow=2:3');
    expect(messages).toEqual([]);
    expect(settings.slow).toEqual({ rank: 2, factor: 3 });
    expect(hashFromSettings(settings)).toContain('slow=2:3');
    expect(hashFromSettings(defaultSettings)).not.toContain('slow');
    expect(runKey(settings)).not.toBe(runKey({ ...settings, slow: null }));
    const bad = settingsFromHash('#slow=2:0');
    expect(bad.settings.slow).toBeNull();
    expect(bad.messages[0]!.message).toMatch(
      /slow: the factor "0" must be a whole number from 1 to 16.* Using slow=off\./,
    );
  });

  test('hash keys are unique and each names one field', () => {
    expect(new Set(hashKeys).size).toBe(settingKeys.length);
  });

  test('a run is keyed by the fields that re-run the layer, and only by them', () => {
    const base = runKey(defaultSettings);
    const viewOnly = { ...defaultSettings, pass: 'forward', view: 'gemm', step: 3, layers: 24, gpus: 16 } as const;
    expect(runKey(viewOnly)).toBe(base);
    for (const change of [{ tp: 4 }, { sp: true }, { h: 32 }, { net: 'measured' }, { machine: 'browser' }] as const)
      expect(runKey({ ...defaultSettings, ...change }), JSON.stringify(change)).not.toBe(base);
  });

  test('a validation message goes under the field’s control, or under the preset when the field has none', () => {
    expect(hasControl('gbatch')).toBe(true);
    expect(hasControl('tp')).toBe(true);
    expect(hasControl('step')).toBe(false);
    expect(hasControl('seed')).toBe(false);
  });
});
