import { describe, expect, test } from 'vitest';
import {
  defaultSettings,
  dpCap,
  gpusCap,
  hashFromSettings,
  hasControl,
  ppCap,
  settingsFromHash,
  settingsTable,
} from '../../../../src/ui/settings/state.ts';
import { parseInterconnect } from '../../../../src/hardware/interconnect.ts';
import { quoted } from '../../../../src/core/quote.ts';
import { meshIssues } from '../../../../src/ui/settings/mesh-settings.ts';

describe('hostile URL hashes', () => {
  test.each(['constructor', '__proto__', 'toString', 'hasOwnProperty'])(
    'the inherited name %s is reported as an unknown key and changes no setting',
    (key) => {
      const { settings, messages } = settingsFromHash(`#${key}=1`);
      expect(settings).toEqual(defaultSettings);
      expect(messages).toEqual([{ key, message: expect.stringMatching(new RegExp(`^unknown key "${key}" ignored`)) }]);
    },
  );

  test('a 10 kB bad value is echoed cut to 40 characters with an ellipsis and its length', () => {
    const value = 'x'.repeat(10_000);
    const { settings, messages } = settingsFromHash(`#h=${value}&net=${value}&preset=${value}`);
    expect(settings.h).toBe(defaultSettings.h);
    expect(messages).toHaveLength(3);
    for (const m of messages) {
      expect(m.message).toContain(`"${'x'.repeat(40)}…" (10000 characters)`);
      expect(m.message.length).toBeLessThan(400);
    }
  });

  test('200 unknown keys give one message naming the first eight and counting the rest', () => {
    const hash = '#' + Array.from({ length: 200 }, (_, i) => `k${i}=1`).join('&') + '&tp=4';
    const { settings, messages } = settingsFromHash(hash);
    expect(settings.tp).toBe(4);
    expect(messages).toHaveLength(1);
    expect(messages[0].key).toBe('k0');
    expect(messages[0].message).toMatch(
      /^200 unknown keys "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7" and 192 more ignored; the keys are preset, /,
    );
  });

  test('a long unknown key is shortened too', () => {
    const { messages } = settingsFromHash(`#${'k'.repeat(5000)}=1`);
    expect(messages[0].message).toContain(`"${'k'.repeat(40)}…" (5000 characters)`);
  });

  test('net=constructor is an unknown interconnect, not the Object constructor', () => {
    expect(() => parseInterconnect('constructor')).toThrow(/^unknown interconnect "constructor"/);
    expect(settingsFromHash('#net=__proto__').settings.net).toBe(defaultSettings.net);
  });

  test('the GPU budget and the pipeline stages are capped: the cap is taken, one more is refused naming the cap and why', () => {
    const ok = settingsFromHash(`#gpus=${gpusCap.max}&pp=${ppCap.max}`);
    expect(ok.messages).toEqual([]);
    expect([ok.settings.gpus, ok.settings.pp]).toEqual([gpusCap.max, ppCap.max]);
    const { settings, messages } = settingsFromHash('#pp=1000000&gpus=10000000');
    expect([settings.gpus, settings.pp]).toEqual([defaultSettings.gpus, defaultSettings.pp]);
    expect(messages).toEqual([
      {
        key: 'gpus',
        message: `gpus = 10000000 is more than ${gpusCap.max} (${gpusCap.why}): write gpus=${gpusCap.max} or less. Using gpus=8.`,
      },
      {
        key: 'pp',
        message: `pp = 1000000 is more than ${ppCap.max} (${ppCap.why}): write pp=${ppCap.max} or less. Using pp=1.`,
      },
    ]);
    // The machine panel's inputs parse with the same rows.
    expect(() => settingsTable.gpus.parse(String(gpusCap.max + 1))).toThrow(/^gpus = 8193 is more than 8192/);
    expect(() => settingsTable.pp.parse(String(ppCap.max + 1))).toThrow(/^pp = 65 is more than 64/);
  });

  test('the mesh settings: d and m capped naming why, a schedule only by name, each refusal keeping the default', () => {
    const { settings, messages } = settingsFromHash('#dp=17&m=1000000&schedule=constructor&distopt=maybe');
    expect([settings.dp, settings.m, settings.schedule, settings.distopt]).toEqual([
      defaultSettings.dp,
      defaultSettings.m,
      defaultSettings.schedule,
      defaultSettings.distopt,
    ]);
    expect(messages.map((m) => m.key)).toEqual(['dp', 'm', 'schedule', 'distopt']);
    expect(messages[0].message).toBe(`dp = 17 is more than 16 (${dpCap.why}): write dp=16 or less. Using dp=1.`);
    expect(messages[1].message).toMatch(
      /^m = 1000000 is more than 64 \(four times the seeds' .*\): write m=64 or less/,
    );
    expect(messages[2].message).toBe(
      'schedule must be one of afab, 1f1b, interleaved, zb-h1, got "constructor". Using schedule=1f1b.',
    );
    for (const k of ['dp', 'm', 'schedule', 'distopt', 'pp', 'vpp'] as const) expect(hasControl(k)).toBe(true);
    const round = settingsFromHash('#tp=2&pp=2&dp=2&m=8&schedule=zb-h1&distopt=1');
    expect(round.messages).toEqual([]);
    expect(settingsFromHash(hashFromSettings(round.settings)).settings).toEqual(round.settings);
  });

  test('the mesh rules sit at the control just changed when it is involved, else at their own', () => {
    const s = settingsFromHash('#tp=2&pp=2&dp=2&m=3&schedule=interleaved&vpp=2').settings;
    expect(meshIssues(s).map((i) => i.field)).toEqual(['m']);
    expect(meshIssues(s, 'pp').map((i) => i.field)).toEqual(['pp']);
    expect(meshIssues({ ...s, pp: 1, dp: 1 })).toEqual([]); // no mesh, no mesh rules
  });

  test('placement and step have no control of their own: their messages say what to write, for the link banner', () => {
    const { settings, messages } = settingsFromHash('#placement=<img src=x onerror=alert(1)>&view=classroom&step=-1');
    expect(settings.placement).toBe(defaultSettings.placement);
    expect(settings.step).toBe(defaultSettings.step);
    expect(messages.map((m) => m.key)).toEqual(['step', 'placement']);
    expect(messages.map((m) => hasControl(m.key))).toEqual([false, false]);
    expect(messages[0]!.message).toBe('step must be a whole number ≥ 1, got "-1". Using step=1.');
    expect(messages[1]!.message).toMatch(
      /^placement "<img src=x onerror=alert\(1\)>": use megatron, .* or custom:<GPU list>/,
    );
  });

  test('quoted counts characters, not UTF-16 units, and leaves short text whole', () => {
    expect(quoted('abc')).toBe('"abc"');
    expect(quoted('é'.repeat(41))).toBe(`"${'é'.repeat(40)}…" (41 characters)`);
  });
});
