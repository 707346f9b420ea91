import { setupConfig, type TrainingSetup } from '../../megatron/training-setup.ts';
import {
  plans,
  priceLayers,
  referencePlans,
  type LayerPlans,
  type LayerPricing,
  type PricedRanks,
} from './layer-pricing.ts';
import type { Machine } from '../layer/projected-layer.ts';

/**
 * Layer pricings shared across the setups of one machine: two setups with the same sizes,
 * micro-batch, t, SP, cp and async overlaps get the same pricing (priceLayers reads nothing else), so a
 * search plans and schedules each layer once. The key lists exactly those fields.
 */
export class LayerPricingCache {
  private readonly byKey = new Map<string, Promise<LayerPricing>>();
  /** The TP = 1 model-FLOP plans, by sizes and micro-batch (shared across t, SP and cp). */
  private readonly references = new Map<string, Promise<LayerPricing['ref']>>();

  /**
   * `ranks` as priceLayers takes it: `first` for searches (same step, 1/t the scheduling);
   * `plans` the layer plans by configuration, shareable between caches of machines that differ
   * in their kernel options only (a plan is the layer's, not the machine's).
   */
  constructor(
    readonly machine: Machine,
    readonly ranks: PricedRanks = 'first',
    private readonly planned: Map<string, Promise<LayerPlans>> = new Map(),
  ) {}

  /** Distinct layers priced so far. */
  get size(): number {
    return this.byKey.size;
  }

  /** The pricing of `setup`'s layer, computed once per key. */
  price(setup: TrainingSetup): Promise<LayerPricing> {
    const { s, b, h, heads, groups, ffn, vocab, kvChannels } = setup.sizes;
    const sizesKey = [s, b, h, heads, groups, ffn, vocab, kvChannels].join(',');
    const key = [
      sizesKey,
      setup.tp,
      setup.sp && setup.tp > 1,
      setup.cp ?? 1,
      setup.overlap,
      setup.overlapSpRegather ?? setup.overlap,
    ].join(',');
    let p = this.byKey.get(key);
    if (!p) {
      let ref = this.references.get(sizesKey);
      if (!ref) this.references.set(sizesKey, (ref = referencePlans(setup)));
      const c = setupConfig(setup);
      const planKey = JSON.stringify(c);
      let layer = this.planned.get(planKey);
      if (!layer) this.planned.set(planKey, (layer = plans(c)));
      p = priceLayers(setup, this.machine, this.ranks, ref, layer);
      this.byKey.set(key, p);
    }
    return p;
  }
}
