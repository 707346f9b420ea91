import type { LinkSharingCost, SharingPartner } from './link-sharing.ts';

/** What the partner of a shared link is, for labels. */
const partnerLabel: Readonly<Record<SharingPartner, string>> = {
  tp: 'the TP collectives',
  pp: 'the pipeline sends and receives',
};

/** One shared link in words: "the gradient buckets with the TP collectives on <link>: 1.2 ms of link time taken, compute 0.8 ms later". */
export function describeSharing(c: LinkSharingCost, ms: (x: number) => string): string {
  const what = c.overlap === 'overlapGradReduce' ? 'the gradient buckets' : 'the parameter all-gather';
  return `${what} with ${partnerLabel[c.with]} on ${c.link}: ${ms(c.sharedMs)} of link time taken, compute ${ms(c.computeDelayMs)} later`;
}
