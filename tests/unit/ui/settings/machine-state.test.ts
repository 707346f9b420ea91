import { describe, expect, it } from 'vitest';
import { systems } from '../../../../src/hardware/systems.ts';
import { machineChoice } from '../../../../src/ui/settings/machine-choice.ts';
import { configOf, defaultSettings, hashFromSettings, settingsFromHash } from '../../../../src/ui/settings/state.ts';
import { makePlan } from '../../../../src/parallel/plan.ts';
import { projectedCommSource, projectLayer } from '../../../../src/projection/layer/projected-layer.ts';

/** The seeds' 8×V100 PCIe box in fp16, 12 layers, 8 GPUs, global batch b·N. */
const machineDefaults = {
  machine: 'cluster',
  system: 'v100-pcie-8',
  dtype: 'fp16',
  layers: 12,
  gpus: 8,
  gbatch: 'auto',
} as const;

describe('the machine settings in the URL hash', () => {
  it("default to a real cluster: the seeds' 8×V100 PCIe box in fp16, and stay out of the default link", () => {
    expect(defaultSettings).toMatchObject(machineDefaults);
    expect(hashFromSettings(defaultSettings)).not.toMatch(/machine|system|dtype|layers|gpus|gbatch/);
  });

  it('round-trip when set', () => {
    const s = {
      ...defaultSettings,
      machine: 'custom' as const,
      system: 'dgx-h100',
      dtype: 'bf16' as const,
      layers: 32,
      gpus: 64,
      gbatch: 512,
    };
    const h = hashFromSettings(s);
    expect(h).toContain('machine=custom&system=dgx-h100&dtype=bf16&layers=32&gpus=64&gbatch=512');
    expect(settingsFromHash(h).settings).toEqual(s);
    const c = hashFromSettings({ ...s, system: 'custom:a100-sxm-80gb:4:2:100' });
    expect(settingsFromHash(c).settings.system).toBe('custom:a100-sxm-80gb:4:2:100');
  });

  it('name illegal and unknown values and keep the defaults', () => {
    const { settings, messages } = settingsFromHash('#machine=cloud&system=dgx-9&dtype=fp8&layers=0&gpus=x&gbatch=-4');
    expect(settings).toMatchObject(machineDefaults);
    const by = Object.fromEntries(messages.map((m) => [m.key, m.message]));
    expect(by.machine).toMatch(/machine must be one of cluster, browser, custom, got "cloud"/);
    expect(by.system).toMatch(/unknown system "dgx-9"/);
    expect(by.dtype).toMatch(/unknown dtype "fp8"/);
    expect(by.layers).toMatch(/layers must be a whole number ≥ 1/);
    expect(by.gpus).toMatch(/gpus must be a whole number ≥ 1/);
    expect(by.gbatch).toBe('gbatch must be a whole number ≥ 1, got "-4". Using gbatch=auto.');
  });
});

describe('machineChoice', () => {
  it('projects a real cluster onto its system, measures this browser, and mixes only when custom', () => {
    const cluster = machineChoice(defaultSettings);
    expect(cluster.projection?.system).toBe(systems['v100-pcie-8']);
    expect(cluster.projection?.dtype).toBe('fp16');
    expect(cluster.label).toMatch(/^a real cluster \(8×V100 PCIe/);
    const browser = machineChoice({ ...defaultSettings, machine: 'browser' });
    expect(browser.comm).toBe('measured');
    expect(browser.projection).toBeUndefined();
    expect(browser.label).toBe('this browser as the cluster');
    const mixed = machineChoice({ ...defaultSettings, machine: 'custom', net: 'nvlink-a100' });
    expect(mixed.projection).toBeUndefined();
    expect(mixed.comm).toMatchObject({ name: 'nvlink-a100' });
    expect(mixed.label).toMatch(/^custom: compute measured here, communication on a modeled link/);
  });

  it('puts a format the GPU lacks under the dtype control', () => {
    const c = machineChoice({ ...defaultSettings, dtype: 'bf16' });
    expect(c.issues).toEqual([{ field: 'dtype', message: expect.stringMatching(/no bf16 tensor cores/) }]);
    expect(machineChoice({ ...defaultSettings, system: 'dgx-a100', dtype: 'bf16' }).issues).toEqual([]);
  });
});

describe('the timeline follows the placement', () => {
  // The seeds' V100 PCIe box at t = 2, DP = 4: each TP pair under one PCIe switch (PIX, 12 GB/s, NCCL's
  // PCIe Gen3 figure) or across the sockets, the four pairs sharing the 7.6 GB/s socket link (1.9 GB/s each).
  const at = async (placement: string) => {
    const s = settingsFromHash(`#tp=2&placement=${placement}`).settings;
    const machine = machineChoice(s).projection!;
    const { plan } = await makePlan(configOf(s));
    const tl = projectLayer(plan, machine, s.overlap);
    const comm = tl.events.filter((e) => e.rank === 0 && e.collective).reduce((a, e) => a + e.t1 - e.t0, 0);
    return { machine, comm, exposed: tl.totals[0]!.exposedMs, caption: projectedCommSource(machine, 2) };
  };

  it('prices the TP ring on the links it crosses: across sockets slower than under one switch', async () => {
    const under = await at('tp-switch');
    const across = await at('tp-sockets');
    expect(under.machine.placed?.tp.busGBps).toBe(12);
    expect(across.machine.placed?.tp.busGBps).toBeCloseTo(7.6 / 4, 12);
    expect(across.comm).toBeGreaterThan(under.comm);
    expect(across.exposed).toBeGreaterThan(under.exposed);
    expect(under.caption).toMatch(/^projected on PCIe Gen3.*; TP ring on tp-switch: slowest hop GPU\d→GPU\d \(PIX\)/);
    expect(across.caption).toMatch(/TP ring on tp-sockets: .*\(SYS, link shared by 4\), 1\.90 GB\/s/);
  });

  it('keeps the catalog link where the placement cannot apply (no topology for a custom box, t not dividing the GPUs)', () => {
    expect(machineChoice({ ...defaultSettings, tp: 2, gpus: 3 }).projection?.placed).toBeUndefined();
    expect(machineChoice({ ...defaultSettings, system: 'custom:v100-pcie:2:5:10' }).projection?.placed).toBeUndefined();
  });
});
