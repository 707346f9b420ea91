import { referenceAllToAll } from './all-to-all.ts';
import type { CollectiveCall } from './call.ts';
import { hostTensor, type HostTensor } from './host-tensor.ts';
import { concatAlong, reduceArrays, sliceAlong } from './layout.ts';

/**
 * The defining semantics of each collective: inputs[r] is rank r's tensor, the result is every
 * rank's output (reductions in float64, in rank order). Every transport is tested against this.
 * `calls[r]` is rank r's call where ranks' calls differ (an all-to-all's rows and splits).
 */
export function referenceCollective(
  call: CollectiveCall,
  inputs: readonly HostTensor[],
  calls: readonly CollectiveCall[] = inputs.map(() => call),
): HostTensor[] {
  const t = inputs.length;
  const reduced = (): HostTensor =>
    hostTensor(
      call.shape,
      reduceArrays(
        inputs.map((x) => x.data),
        call.reduceOp ?? 'sum',
      ),
    );
  switch (call.op) {
    case 'allReduce': {
      const y = reduced();
      return inputs.map(() => hostTensor(y.shape, y.data.slice()));
    }
    case 'reduceScatter': {
      const y = reduced();
      return inputs.map((_, r) => sliceAlong(y, call.dim!, t, r));
    }
    case 'allGather': {
      const y = concatAlong(inputs, call.dim!);
      return inputs.map(() => hostTensor(y.shape, y.data.slice()));
    }
    case 'broadcast':
      return inputs.map(() => hostTensor(call.shape, inputs[call.root!].data.slice()));
    case 'barrier':
      return inputs.map((x) => x);
    case 'ringExchange':
      return inputs.map((_, r) => hostTensor(call.shape, inputs[(r - 1 + t) % t].data.slice()));
    case 'allToAll':
      return referenceAllToAll(calls, inputs);
  }
}
