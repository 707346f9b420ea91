import { afterEach, describe, expect, test } from 'vitest';
import { publicHfConfig, publicHfConfigs } from '../../../../src/megatron/hf-configs.ts';
import { hfJobDefaults } from '../../../../src/megatron/hf-config.ts';
import { clusterModelChoices, hfPasted, parseClusterModel } from '../../../../src/ui/settings/cluster-model-choice.ts';
import {
  clusterModelIssues,
  clusterModelOf,
  clusterModelSetup,
  clusterMoeWords,
  hfCaps,
} from '../../../../src/ui/settings/cluster-model.ts';
import { moeIssues, moeLayoutOf, moeSetupOf } from '../../../../src/ui/settings/moe-settings.ts';
import { projectStep } from '../../../../src/projection/step/cluster-projection.ts';
import { systems } from '../../../../src/hardware/systems.ts';
import {
  forgetPastedConfig,
  keepPastedConfig,
  pastedConfigMaxChars,
  readPastedConfig,
} from '../../../../src/ui/settings/pasted-hf-config.ts';
import {
  defaultSettings,
  hasControl,
  hashFromSettings,
  settingsFromHash,
  type Settings,
} from '../../../../src/ui/settings/state.ts';
import { applyAdvisorRow, rowOnPage } from '../../../../src/ui/cluster/advisor-apply.ts';
import { parseProjectArgs } from '../../../../scripts/project/project-args.ts';
import { plainLayout } from '../../../layout-fixtures.ts';

const mixtralText = JSON.stringify(publicHfConfig('mixtral-8x7b-v0.1')!.config);
const page = (over: Partial<Settings>): Settings => ({ ...defaultSettings, ...over });
/** The page's default dispatcher (its MoE block's and the cluster's one setting), the CLI's flag for it. */
const pageDispatch = ['--moe-token-dispatcher-type', defaultSettings.dispatcher];

afterEach(() => forgetPastedConfig());

describe('the cluster model chosen in the hash', () => {
  test('every built-in config is hf:NAME, and each choice round-trips through the hash while the default states none', () => {
    expect(clusterModelChoices).toEqual([
      'seeds-v100',
      'megatron-1.7b',
      ...publicHfConfigs.map((c) => `hf:${c.name}`),
      'hf:pasted',
      'layer',
    ]);
    for (const cmodel of clusterModelChoices) {
      const s = page({ cmodel });
      const { settings, messages } = settingsFromHash(hashFromSettings(s));
      expect(messages).toEqual([]);
      expect(settings.cmodel).toBe(cmodel);
    }
    expect(hashFromSettings(defaultSettings)).not.toMatch(/cmodel=/);
    expect(hashFromSettings(page({ cmodel: 'hf:mixtral-8x7b-v0.1' }))).toMatch(/[#&]cmodel=hf:mixtral-8x7b-v0\.1(&|$)/);
  });

  test('an unknown name is refused with every legal one, and a 10 kB value is cut in the message', () => {
    expect(() => parseClusterModel('hf:gpt-5')).toThrow(
      /hf:NAME with NAME one of llama-3\.1-8b, .*deepseek-v3; got "hf:gpt-5"/,
    );
    const { settings, messages } = settingsFromHash(`#cmodel=${'x'.repeat(10_000)}`);
    expect(settings.cmodel).toBe('seeds-v100');
    expect(messages[0]!.message.length).toBeLessThan(600);
    expect(messages[0]!.message).toMatch(/\(10000 characters\)/);
  });
});

describe('the model a config.json gives the cluster panel and the advisor', () => {
  test('Mixtral 8x7B: its sizes and L, s and b from Megatron-LM’s Mixtral example, its experts with the page’s EP and ETP', () => {
    const m = clusterModelOf(page({ cmodel: 'hf:mixtral-8x7b-v0.1', ep: 4, etp: 1 }));
    expect(m.sizes).toEqual({ s: 4096, b: 1, h: 4096, heads: 32, groups: 8, ffn: 14336, vocab: 32000 });
    expect([hfJobDefaults.s, hfJobDefaults.b]).toEqual([4096, 1]);
    expect(m.layers).toBe(32);
    expect(m.moe).toMatchObject({ experts: 8, topk: 2, ffn: 14336, layerFreq: 1, ep: 4, etp: 1 });
    expect(m.mla).toBeUndefined();
    expect(m.from).toMatch(
      /L 32 from its num_hidden_layers; s 4096 and b 1 from Megatron-LM core_v0\.19\.0 examples\/mixtral/,
    );
  });

  test('DeepSeek-V3: the same MoE and MLA setup as npm run project -- --hf-config deepseek-v3 (the one reader)', () => {
    const m = clusterModelOf(page({ cmodel: 'hf:deepseek-v3', ep: 8, etp: 1 }));
    const cli = parseProjectArgs(['--hf-config', 'deepseek-v3', '--ep', '8', '--etp', '1', ...pageDispatch]).setup;
    expect(m.moe).toEqual(cli.moe);
    expect(m.mla).toEqual(cli.mla);
    expect(m.layers).toBe(cli.layers);
    expect(m.tiedEmbeddings).toBe(cli.tiedEmbeddings);
    expect(m.sizes).toEqual(cli.sizes);
    expect((m.moe!.layerFreq as readonly number[]).slice(0, 4)).toEqual([0, 0, 0, 1]);
  });

  test('Qwen3-30B-A3B: head_dim 128 ≠ h/heads = 64 is priced as --kv-channels 128, the same sizes as the CLI’s', () => {
    const m = clusterModelOf(page({ cmodel: 'hf:qwen3-30b-a3b', ep: 8, etp: 1 }));
    const cli = parseProjectArgs(['--hf-config', 'qwen3-30b-a3b', '--ep', '8', '--etp', '1', ...pageDispatch]).setup;
    expect(m.sizes).toEqual({
      s: 4096,
      b: 1,
      h: 2048,
      heads: 32,
      groups: 4,
      ffn: 6144,
      vocab: 151936,
      kvChannels: 128,
    });
    expect(m.sizes).toEqual(cli.sizes);
    expect(m.moe).toEqual(cli.moe);
    expect(clusterModelIssues(page({ cmodel: 'hf:qwen3-30b-a3b', ep: 8, etp: 1 }))).toEqual([]);
  });

  test('a config the projection cannot price (an activation other than SwiGLU) is refused when pasted, and not kept', () => {
    expect(() => keepPastedConfig(mixtralText.replace('"silu"', '"gelu"'))).toThrow(
      /the projection cannot price this model yet: hidden_act "gelu"/,
    );
    expect(clusterModelIssues(page({ cmodel: hfPasted }))[0]!.message).toMatch(/this tab has none/);
  });

  test('hf:pasted names the config kept in this tab; without one the cmodel control says to paste it again', () => {
    const s = page({ cmodel: hfPasted });
    expect(() => clusterModelOf(s)).toThrow(/this tab has none .*paste or drop the config\.json/);
    expect(clusterModelIssues(s)[0]!.field).toBe('cmodel');
    const hf = keepPastedConfig(mixtralText.replace('{', '{"my_new_field": 3, '));
    expect(hf.unknownFields).toEqual(['my_new_field']);
    const m = clusterModelOf(s);
    expect([m.layers, m.moe?.experts, m.hf?.unknownFields]).toEqual([32, 8, ['my_new_field']]);
    expect(clusterModelIssues(s)).toEqual([]);
  });

  test('bad or hostile text is refused with what to change, quickly and with a short message, and is not kept', () => {
    const cases: [string, RegExp][] = [
      ['not json at all', /not JSON/],
      ['[1, 2]', /one JSON object/],
      ['{"hidden_size": 4096}', /lacks num_hidden_layers .*add them/],
      [
        mixtralText.replace('"hidden_size":4096', `"hidden_size":"${'9'.repeat(100_00)}"`),
        /hidden_size is ".{40}…" \(10002 characters\); write a whole number/,
      ],
      [mixtralText.replace('"num_hidden_layers":32', '"num_hidden_layers":32.5'), /num_hidden_layers is 32\.5/],
      [
        mixtralText.replace('"hidden_act":"silu"', '"hidden_act":{"a":[1,2,3]}'),
        /cannot price .*hidden_act \{"a":\[1,2,3\]\}/,
      ],
      ['x'.repeat(10 * 2 ** 20), /10,485,760 characters, more than the 65,536 taken here/],
    ];
    for (const [text, message] of cases) {
      const t0 = performance.now();
      let thrown = '';
      try {
        keepPastedConfig(text);
      } catch (e) {
        thrown = (e as Error).message;
      }
      expect(thrown, text.slice(0, 60)).toMatch(message);
      expect(thrown.length).toBeLessThan(400);
      // Not a timing assertion on speed: a hang would stop here, the bound is three orders above a parse.
      expect(performance.now() - t0).toBeLessThan(5000);
    }
    expect(() => clusterModelOf(page({ cmodel: hfPasted }))).toThrow(/this tab has none/);
    expect(pastedConfigMaxChars).toBe(65536);
  });

  test('a config past the caps (L, experts) is refused at the control, not laid out', () => {
    keepPastedConfig(mixtralText.replace('"num_hidden_layers":32', '"num_hidden_layers":1000000000'));
    expect(() => clusterModelOf(page({ cmodel: hfPasted }))).toThrow(
      /num_hidden_layers 1000000000 is more than the 1024/,
    );
    keepPastedConfig(mixtralText.replace('"num_local_experts":8', `"num_local_experts":${hfCaps.experts + 1}`));
    expect(() => clusterModelOf(page({ cmodel: hfPasted }))).toThrow(/4097 experts are more than the 4096/);
    expect(readPastedConfig(mixtralText).model.layers).toBe(32);
  });
});

describe("the cluster's EP and ETP: the page's ep and etp", () => {
  test("Megatron's rules that hold for every row sit at ep with the EP values that pass", () => {
    const s = page({ cmodel: 'hf:mixtral-8x7b-v0.1', ep: 3, etp: 1, gpus: 8 });
    const [issue] = clusterModelIssues(s);
    expect(issue!.field).toBe('ep');
    expect(issue!.message).toMatch(
      /multiple of expert model parallel_size \(8 experts, EP 3\).*Legal here: EP 1, 2, 4, 8 at ETP 1\./,
    );
    // ETP·EP·p dividing N is each row's own rule (N = t·p·cp·d per row): not an issue here.
    expect(clusterModelIssues({ ...s, ep: 8, etp: 2 })).toEqual([]);
    expect(clusterModelIssues({ ...s, ep: 8, etp: 3 })[0]).toMatchObject({
      field: 'etp',
      message: expect.stringMatching(/the expert FFN \(14336\) is not divisible by ETP \(3\)/),
    });
    expect(clusterModelIssues({ ...s, ep: 8 })).toEqual([]);
    // A dense cluster model has no EP rule; the page layer's MoE block has its own (moeIssues).
    expect(clusterModelIssues({ ...s, cmodel: 'hf:llama-3.1-8b' })).toEqual([]);
  });

  test("apply sets the row's EP and ETP (absent ETP is t), and leaves them on a dense row", () => {
    const row = plainLayout({ tp: 2, sp: true, distributedOptimizer: true, overlapGradReduce: true, ep: 4 });
    const s = page({ cmodel: 'hf:mixtral-8x7b-v0.1', ep: 1, etp: 1 });
    const { settings, notApplied } = applyAdvisorRow(s, row);
    expect([settings.ep, settings.etp]).toEqual([4, 2]);
    expect(notApplied).toEqual([]);
    expect(rowOnPage(settings, row)).toBe(true);
    expect(rowOnPage({ ...settings, etp: 1 }, row)).toBe(false);
    expect(applyAdvisorRow(s, { ...row, etp: 1 }).settings.etp).toBe(1);
    const { ep: _ep, ...dense } = row;
    const d = applyAdvisorRow(page({ ep: 2, etp: 2 }), dense).settings;
    expect([d.ep, d.etp]).toEqual([2, 2]);
  });
});

describe("the cluster's MoE flags: dispatcher, capacity, grouped GEMM, the overlaps and the imbalance what-if", () => {
  const h100 = { system: systems['dgx-h100'], dtype: 'bf16' as const };
  /** One H100 node, t 1, EP 8 (a layout every flag below is legal on): the step the cluster panel's t = 1 row prices. */
  const step = (s: Settings) =>
    projectStep(
      { ...clusterModelSetup(clusterModelOf(s)), tp: 1, sp: false, gpus: 8, globalBatch: 8, overlap: true },
      h100,
    );
  const mixtral = page({ cmodel: 'hf:mixtral-8x7b-v0.1', ep: 8, etp: 1 });

  test('each round-trips through the hash with a short key; the defaults are the CLI’s and leave the link', () => {
    const { settings, messages } = settingsFromHash('#dispatcher=flex&capacity=1.25&gg=1&epov=1&seov=1&imb=1.5');
    expect(messages).toEqual([]);
    expect(settings).toMatchObject({ dispatcher: 'flex', capacity: 1.25, gg: true, epov: true, seov: true, imb: 1.5 });
    expect(settingsFromHash(hashFromSettings(settings)).settings).toEqual(settings);
    // --moe-grouped-gemm, both overlaps off and uniform routing: moeDefaults, as npm run project has them.
    const cli = parseProjectArgs(['--hf-config', 'mixtral-8x7b-v0.1']).setup.moe!;
    expect([defaultSettings.gg, defaultSettings.epov, defaultSettings.seov, defaultSettings.imb]).toEqual([
      cli.groupedGemm,
      cli.overlapEpComm,
      cli.sharedExpertOverlap,
      cli.imbalance,
    ]);
    expect(hashFromSettings(defaultSettings)).not.toMatch(/[#&](gg|epov|seov|imb)=/);
    for (const k of ['gg', 'epov', 'seov', 'imb'] as const) expect(hasControl(k)).toBe(true);
    expect(settingsFromHash('#imb=0.5').messages[0]!.message).toMatch(
      /^imb must be a number from 1 \(uniform routing\) to 64/,
    );
  });

  test('a config’s experts carry all of them, the same setup as npm run project with the same flags', () => {
    const s = { ...mixtral, dispatcher: 'alltoall' as const, capacity: 1.25, gg: true, epov: true, imb: 1.5 };
    const cli = parseProjectArgs([
      ...['--hf-config', 'mixtral-8x7b-v0.1', '--ep', '8', '--etp', '1', '--moe-token-dispatcher-type', 'alltoall'],
      ...['--moe-expert-capacity-factor', '1.25', '--moe-grouped-gemm', '--overlap-moe-expert-parallel-comm'],
      ...['--moe-imbalance', '1.5'],
    ]).setup;
    expect(clusterModelOf(s).moe).toEqual(cli.moe);
    expect(clusterMoeWords(clusterModelOf(s).moe!)).toMatch(
      /--moe-token-dispatcher-type alltoall .*--moe-expert-capacity-factor 1\.25 --moe-grouped-gemm --overlap-moe-expert-parallel-comm \(load imbalance 1\.5: the projection's what-if, no Megatron flag\)$/,
    );
    expect(clusterMoeWords(clusterModelOf(mixtral).moe!)).not.toMatch(/grouped|overlap|imbalance|capacity/);
  });

  test('each moves the projected step (t 1, EP 8 on one H100 node)', async () => {
    const base = (await step(mixtral)).stepMs;
    const moved = async (over: Partial<Settings>): Promise<number> => (await step({ ...mixtral, ...over })).stepMs;
    expect(await moved({ dispatcher: 'allgather' })).not.toBe(base);
    expect(await moved({ dispatcher: 'flex' })).not.toBe(base);
    // One expert a rank at EP 8: a grouped GEMM over one expert is that expert's GEMM; at EP 2 it groups four.
    expect(await moved({ gg: true })).toBe(base);
    expect(await moved({ ep: 2, gg: true })).not.toBe(await moved({ ep: 2 }));
    expect(await moved({ epov: true })).toBeLessThan(base);
    const skewed = await moved({ imb: 2 });
    expect(skewed).toBeGreaterThan(base);
    // A capacity factor of 1 drops the busiest rank's tokens past 1× the mean: the imbalance's cost goes.
    expect(await moved({ imb: 2, capacity: 1 })).toBeLessThan(skewed);
    const ds = page({ cmodel: 'hf:deepseek-v3', ep: 8, etp: 1 });
    const shared = (await step(ds)).stepMs;
    expect((await step({ ...ds, seov: true })).stepMs).toBeLessThan(shared);
  });

  test("Megatron's rules on them sit at their control with the values that pass, and the projection throws the same", async () => {
    const ag = { ...mixtral, dispatcher: 'allgather' as const, epov: true };
    const [ov] = clusterModelIssues(ag);
    expect(ov).toMatchObject({ field: 'epov' });
    expect(ov!.message).toMatch(
      /supported with alltoall\/flex token dispatcher\. \(megatron\/core\/transformer\/transformer_config\.py:2683-2686\) Legal here: EP overlap off, or alltoall\/flex with EP > 1/,
    );
    await expect(step(ag)).rejects.toThrow('overlap_moe_expert_parallel_comm is supported with alltoall/flex');
    // Changing the dispatcher puts the same rule under the dispatcher.
    expect(clusterModelIssues(ag, 'dispatcher')[0]!.field).toBe('dispatcher');
    expect(clusterModelIssues({ ...mixtral, seov: true })[0]!.message).toMatch(
      /needs shared experts .*Legal here: shared-expert overlap off \(this model has no shared experts\)\./,
    );
    expect(clusterModelIssues({ ...mixtral, ep: 1, dispatcher: 'flex' })[0]).toMatchObject({
      field: 'dispatcher',
      message: expect.stringMatching(
        /DeepEP dispatcher requires TPxEP > 1\..*Legal here: alltoall or allgather, or flex at ETP·EP > 1\./,
      ),
    });
    expect(clusterModelIssues({ ...mixtral, epov: true, recompute: 'full' })[0]!.message).toMatch(
      /disable full recomputation/,
    );
    expect(clusterModelIssues({ ...mixtral, dispatcher: 'flex', epov: true, gg: true, imb: 3 })).toEqual([]);
    // The page layer's own block: only the cluster's own flags' rules here (its others are moeIssues').
    const layer = page({ cmodel: 'layer', experts: 8, ep: 3 });
    expect(clusterModelIssues(layer)).toEqual([]);
    expect(clusterModelIssues({ ...layer, ep: 2, epov: true, dispatcher: 'allgather' })[0]!.field).toBe('epov');
  });

  test("flex is the projection's only: the page's MoE block refuses it at the dispatcher with the two the ranks run", () => {
    const block = page({ experts: 8, ep: 2, tp: 1 });
    expect(moeIssues(block).issues).toEqual([]);
    const [issue] = moeIssues({ ...block, dispatcher: 'flex' }).issues;
    expect(issue).toMatchObject({ field: 'dispatcher' });
    expect(issue!.message).toMatch(/priced by the cluster panel only.*Legal here: alltoall, allgather/);
    expect(moeLayoutOf({ ...block, dispatcher: 'flex' }).dispatcher).toBe('alltoall');
  });

  test('pad (--moe-pad-expert-input-to-capacity): in the link, priced and emitted for the cluster, refused where Megatron refuses it, the page’s ranks unpadded', async () => {
    const { settings, messages } = settingsFromHash('#capacity=1.25&pad=1');
    expect(messages).toEqual([]);
    expect(settings.pad).toBe(true);
    expect(settingsFromHash(hashFromSettings(settings)).settings).toEqual(settings);
    expect(hashFromSettings(defaultSettings)).not.toMatch(/[#&]pad=/);
    expect(hasControl('pad')).toBe(true);
    // a config's experts: the same setup as npm run project with the flag, which the command text writes
    const padded = { ...mixtral, dispatcher: 'alltoall' as const, capacity: 1.25, pad: true };
    const cli = parseProjectArgs([
      ...['--hf-config', 'mixtral-8x7b-v0.1', '--ep', '8', '--etp', '1', '--moe-token-dispatcher-type', 'alltoall'],
      ...['--moe-expert-capacity-factor', '1.25', '--moe-pad-expert-input-to-capacity'],
    ]).setup;
    expect(clusterModelOf(padded).moe).toEqual(cli.moe);
    expect(clusterMoeWords(clusterModelOf(padded).moe!)).toMatch(
      /--moe-expert-capacity-factor 1\.25 --moe-pad-expert-input-to-capacity/,
    );
    // every expert computes its whole capacity (1.25× the mean) where unpadded it computes the mean
    expect((await step(padded)).stepMs).toBeGreaterThan((await step({ ...padded, pad: false })).stepMs);
    // Megatron's two refusals (moeRefusals, as the CLI's), at the pad switch, and the projection throws the same
    const [noCf] = clusterModelIssues({ ...mixtral, pad: true });
    expect(noCf).toMatchObject({ field: 'pad' });
    expect(noCf!.message).toMatch(
      /moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity .*transformer_config\.py:1686-1690\) Legal here: padding off, or a capacity factor with the alltoall or allgather dispatcher\./,
    );
    await expect(step({ ...mixtral, pad: true })).rejects.toThrow('moe_expert_capacity_factor must be set');
    expect(clusterModelIssues({ ...padded, dispatcher: 'flex' })[0]).toMatchObject({
      field: 'pad',
      message: expect.stringMatching(/Flex token dispatcher with deepep backend does not support/),
    });
    expect(clusterModelIssues(padded)).toEqual([]);
    // the page layer's block: the cluster prices the padding, its rule at the switch; the ranks and their command do not pad
    const layer = page({ cmodel: 'layer', experts: 8, ep: 2, tp: 1, capacity: 1, pad: true });
    expect(clusterModelOf(layer).moe!.padToCapacity).toBe(true);
    expect(moeSetupOf(layer)!.padToCapacity).toBeUndefined();
    expect(clusterModelIssues({ ...layer, capacity: null })[0]!.field).toBe('pad');
    expect(moeIssues(layer).issues).toEqual([]);
    expect(moeIssues(layer).notes).toEqual([
      {
        field: 'capacity',
        fields: ['capacity', 'pad'],
        message: expect.stringMatching(/cluster panel's rows only: the page's own MoE ranks run without padding/),
      },
    ]);
    expect(moeIssues({ ...layer, pad: false }).notes).toEqual([]);
  });

  test('applying an advisor row keeps them', () => {
    const s = {
      ...mixtral,
      dispatcher: 'flex' as const,
      capacity: 1.5,
      pad: true,
      gg: true,
      epov: true,
      seov: false,
      imb: 1.25,
    };
    const row = plainLayout({ distributedOptimizer: true, overlapGradReduce: true, ep: 4, etp: 1 });
    const { settings } = applyAdvisorRow(s, row);
    expect(settings).toMatchObject({
      dispatcher: 'flex',
      capacity: 1.5,
      pad: true,
      gg: true,
      epov: true,
      imb: 1.25,
      ep: 4,
    });
  });
});
