import { describe, expect, it } from 'vitest';
import type { SharedLink } from '../../../../src/projection/links/link-sharing.ts';
import { stageLinkSharing } from '../../../../src/projection/step/dp-link-sharing.ts';
import type { StageOps } from '../../../../src/projection/step/dp-sync.ts';

const tp: SharedLink = { with: 'tp', link: 'NVSwitch port' };
const pp: SharedLink = { with: 'pp', link: 'NIC' };
const noP2p = { p2pMs: 0, blocks: true, p: 1, v: 1 };

describe('stageLinkSharing: the overlapped gradient sync beside TP or pipeline traffic', () => {
  const ops: StageOps = { chunk: [0, 0], forward: [1, 0], t0: [0, 1], t1: [1, 3] };

  it('TP: a 1 ms stretch with TP wanting half the link (uB 0.5) ends 0.5 ms later; the backward len·slowB later', () => {
    // Fair share from 1 ms: both at C/2; TP's 0.5 ms done at 2, the stretch's last 0.5 alone → 2.5.
    const tpShare = { uF: 0, slowF: 0, uB: 0.5, slowB: 0.25 };
    const x = stageLinkSharing(0, ops, 3, [{ t0: 1, t1: 2 }], [tp], tpShare, noP2p);
    expect(x).toHaveLength(1);
    expect(x[0]!.sharedMs).toBeCloseTo(0.5, 12);
    expect(x[0]!.computeDelayMs).toBeCloseTo(0.25, 12);
  });

  it("TP: a stretch past the stage's end is cut there (len 2 of [1, 5] with the stage ending at 3)", () => {
    const tpShare = { uF: 0, slowF: 0, uB: 0.5, slowB: 0.25 };
    const x = stageLinkSharing(0, ops, 3, [{ t0: 1, t1: 5 }], [tp], tpShare, noP2p);
    // Stretch [1, 3] and TP's 1 ms from 1: shared to 3, the stretch's last 1 ms alone → 4; 1 ms later.
    expect(x[0]!.sharedMs).toBeCloseTo(1, 12);
    expect(x[0]!.computeDelayMs).toBeCloseTo(0.5, 12);
  });

  it("pipeline: the backward's receive [1, 2] meets the stretch [1.5, 3]; both delayed 0.5 ms", () => {
    // Stage 0 of p 2: F [0, 1], B [2, 4]; the receive of B's gradient is 1 ms before B starts.
    const stage0: StageOps = { chunk: [0, 0], forward: [1, 0], t0: [0, 2], t1: [1, 4] };
    const x = stageLinkSharing(0, stage0, 4, [{ t0: 1.5, t1: 3 }], [pp], undefined, {
      p2pMs: 1,
      blocks: true,
      p: 2,
      v: 1,
    });
    // Receive alone [1, 1.5] (0.5 left), shared from 1.5: done 2.5; the stretch 0.5 done by 2.5, 1 alone → 3.5.
    expect(x[0]!.sharedMs).toBeCloseTo(0.5, 12);
    expect(x[0]!.computeDelayMs).toBeCloseTo(0.5, 12);
  });

  it('no busy stretch (no --overlap-grad-reduce), or a link shared with nobody active: nothing', () => {
    expect(stageLinkSharing(0, ops, 3, [], [tp], { uF: 0, slowF: 0, uB: 0.5, slowB: 0.25 }, noP2p)).toEqual([]);
    expect(stageLinkSharing(0, ops, 3, [{ t0: 1, t1: 2 }], [tp], undefined, noP2p)).toEqual([]);
  });
});
