import { describe, expect, it } from 'vitest';
import { configFromPreset } from '../../../src/parallel/config.ts';
import { PipelineSettingError, pipelineSettings } from '../../../src/parallel/pipeline-settings.ts';

const layer = (tp = 1) => configFromPreset('classroom', { tp });

/** The refusal of `raw`: its field and message. */
function refusal(raw: Parameters<typeof pipelineSettings>[0], tp = 1): { field: string; message: string } {
  try {
    pipelineSettings(raw, layer(tp));
  } catch (e) {
    expect(e).toBeInstanceOf(PipelineSettingError);
    return { field: (e as PipelineSettingError).field, message: (e as Error).message };
  }
  throw new Error('not refused');
}

// The CLI's settings on top of the mesh's rules (mesh/mesh-check.ts, tested with the page's
// settings in tests/unit/mesh/mesh-check.test.ts): the defaults, the parsing, and each refusal
// carrying its flag.
describe('pipeline settings', () => {
  it('reads the CLI example and fills the defaults', () => {
    const s = pipelineSettings({ pp: '2', dp: '2', m: '4', schedule: '1f1b' }, layer(2));
    expect(s.model).toMatchObject({ p: 2, v: 1, m: 4, layers: 8, schedule: '1f1b' });
    expect(s).toMatchObject({ dp: 2, sync: 'all-reduce', globalBatch: 4 * layer().b * 2 });
    expect(pipelineSettings({ pp: '4', vpp: '2' }, layer()).model).toMatchObject({
      schedule: 'interleaved',
      v: 2,
      m: 8,
      layers: 8,
    });
    expect(pipelineSettings({ schedule: 'interleaved', pp: '2' }, layer()).model.v).toBe(2);
    expect(pipelineSettings({ pp: '8', m: '1' }, layer()).model.layers).toBe(8);
    expect(pipelineSettings({ pp: '3' }, layer()).model.layers).toBe(9);
    expect(pipelineSettings({ dp: '2', distributedOptimizer: true }, layer()).sync).toBe('distributed-optimizer');
  });

  it('takes m from the global batch: m = G/(b·d)', () => {
    const b = layer().b;
    const s = pipelineSettings({ dp: '2', gbatch: String(6 * b * 2) }, layer());
    expect(s.model.m).toBe(6);
    expect(s.globalBatch).toBe(12 * b);
  });

  it('refuses L that the stages cannot split, naming the legal L', () => {
    const r = refusal({ pp: '4', layers: '6' });
    expect(r.field).toBe('layers');
    expect(r.message).toMatch(
      /^--layers: L = 6 layers do not split over p = 4 .*legal L up to 64 at this p and v: 4, 8, 12/,
    );
  });

  it('refuses m that breaks the interleaved rule, naming the legal m', () => {
    const r = refusal({ pp: '4', vpp: '2', m: '6' });
    expect(r.field).toBe('m');
    expect(r.message).toMatch(
      /^--micro-batches: the interleaved schedule needs m to be a multiple of p = 4.*Legal m: 4, 8, 12, 16/,
    );
  });

  it('refuses a mesh over 16 ranks, naming the legal dp', () => {
    const r = refusal({ pp: '4', dp: '4' }, 2);
    expect(r.field).toBe('dp');
    expect(r.message).toMatch(
      /^--dp: t × p × d = 2 × 4 × 4 = 32 rank workers, more than the 16.*legal d at t = 2, p = 4: 1, 2\.$/,
    );
  });

  it('refuses a global batch that b·d does not divide, naming a legal one', () => {
    const b = layer().b;
    const r = refusal({ dp: '2', gbatch: String(2 * b + 1) });
    expect(r.field).toBe('m');
    expect(r.message).toMatch(/^--micro-batches: the global batch G = \d+ sequences must be a multiple of b·d/);
    expect(refusal({ dp: '2', gbatch: String(4 * b), m: '3' }).message).toMatch(/that is m = 2, not 3/);
  });

  it('refuses unknown schedules, v without interleaving and bad numbers', () => {
    expect(refusal({ schedule: 'gpipe' }).message).toMatch(/write one of afab, 1f1b, interleaved, zb-h1/);
    expect(refusal({ schedule: 'zb-h1', vpp: '2' }).field).toBe('schedule');
    expect(refusal({ pp: 'two' }).message).toBe('--pp: must be a whole number ≥ 1, got "two".');
    expect(refusal({ m: '0' }).field).toBe('m');
  });
});
