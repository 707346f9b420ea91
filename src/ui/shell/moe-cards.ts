// The page's MoE templates (of <tp-app>): the timeline of the layer with its MoE block, the timeline view's MoE card and the classroom view's steps, all from the one MoE run of the settings.
import { html, type TemplateResult } from 'lit';
import { formatMs } from '../../core/format.ts';
import '../classroom/tp-classroom-moe.ts';
import '../timeline/tp-moe-view.ts';
import { moeRunArgsOf } from '../settings/moe-settings.ts';
import { hashFromSettings, type Settings } from '../settings/state.ts';
import type { MoeRunState } from './moe-runs.ts';
import { tracedTimeline, type TracedTimeline } from '../../schedule/traced-timeline.ts';
import type { MoeRun } from '../../session/moe-run.ts';
import '../timeline/tp-timeline.ts';
import { moePlan } from './moe-plan-model.ts';
import './tp-moe-plan.ts';
import { moeWorld } from '../../parallel/moe-layout.ts';
import { moeOracleVerdict } from './moe-oracle-verdict.ts';
import './tp-oracle-badge.ts';

/** The run shown for `s`: the state's run when it ran these settings' args, else none yet. */
function shownRun(m: MoeRunState, s: Settings) {
  const key = JSON.stringify(moeRunArgsOf(s));
  return m.args && JSON.stringify(m.args) === key ? m : undefined;
}

/** The timeline view's MoE card: the straggler, the heat map, the checks, the dispatch matrix, M036; a link to the classroom's steps. */
export function renderMoeCard(m: MoeRunState, s: Settings): TemplateResult {
  const mine = shownRun(m, s);
  return html`<section class="card" data-moe-card>
    <tp-moe-view
      .args=${moeRunArgsOf(s)}
      .run=${mine?.run}
      state=${mine ? mine.state : m.state === 'running' ? 'running' : 'idle'}
      error=${mine?.error ?? ''}
      classroom=${hashFromSettings({ ...s, view: 'classroom' })}
    ></tp-moe-view>
  </section>`;
}

/** The classroom view's MoE card: the seven MoE steps of the run, checked against it. */
export function renderMoeClassroom(m: MoeRunState, s: Settings, gpu: boolean): TemplateResult {
  const mine = shownRun(m, s);
  const status = !gpu
    ? 'The MoE steps show numbers from the rank workers, which need WebGPU.'
    : mine?.state === 'refused' || mine?.state === 'failed'
      ? `The MoE run ${mine.state === 'refused' ? 'cannot run' : 'failed'}: ${mine.error}`
      : mine?.state === 'done'
        ? ''
        : 'waiting for the MoE run on the rank workers…';
  return html`<section class="card" data-moe-classroom data-state=${mine?.state ?? m.state}>
    <h2>Mixture of Experts, step by step: E ${s.experts}, top-${s.topk}, EP ${s.ep}, ETP ${s.etp}</h2>
    <tp-classroom-moe .args=${mine?.args} .run=${mine?.state === 'done' ? mine.run : undefined} .status=${status}></tp-classroom-moe>
  </section>`;
}

/** The traced timeline of each run (drawn again on every render otherwise). */
const traced = new WeakMap<MoeRun, TracedTimeline>();
const timelineOf = (r: MoeRun): TracedTimeline => {
  let tl = traced.get(r);
  if (!tl) traced.set(r, (tl = tracedTimeline(r.trace)));
  return tl;
};

/**
 * The timeline view's timeline with experts set: the layer with its MoE block as the ranks
 * recorded it (the attention passes, its collectives, the all-to-alls with bytes per peer, the
 * expert GEMMs with their rows, the straggler framed), in place of the dense layer's.
 */
export function renderMoeTimeline(m: MoeRunState, s: Settings): TemplateResult {
  const mine = shownRun(m, s);
  const r = mine?.state === 'done' || mine?.state === 'running' ? mine.run : undefined;
  if (!r)
    return html`<p class="note" data-moe-timeline=${mine?.state ?? m.state}>
      ${
        mine?.state === 'refused' || mine?.state === 'failed'
          ? `The layer with its MoE block ${mine.state === 'refused' ? 'cannot run' : 'failed'}: ${mine.error}`
          : 'The rank workers are running the layer with its MoE block…'
      }
    </p>`;
  const what =
    'layer' in r
      ? `the layer with its MoE block in place of the dense MLP on ${r.ranks.length} rank workers`
      : `the MoE block alone (the M036 demonstration) on ${r.ranks.length} rank workers`;
  return html`<tp-timeline
    data-moe="timeline"
    .timeline=${timelineOf(r)}
    caption=${`Recorded on the ranks: ${what}, forward and backward, the bands behind the lanes each pass as the ranks marked it (forward, backward, the gradients' finalize). Each compute block (the attention passes, the expert GEMMs) is timed between two flushes of its GPU, each collective from its call to its return on the rank's transport; the gaps are the host's routing and the kernels not timed one by one. Zoom in for the all-to-alls' bytes per peer; hover for every peer's.`}
  ></tp-timeline>`;
}

/**
 * The top card's totals with experts set: what the ranks recorded of the layer with its MoE block
 * (its step, slowest rank and worst exposed communication, from the traced timeline the view draws),
 * or where its run stands; `transport` the card's note on the ranks' transport.
 */
export function renderMoeTotals(m: MoeRunState, s: Settings, transport: TemplateResult): TemplateResult {
  const mine = shownRun(m, s);
  const l = moeRunArgsOf(s).layout;
  const tl = mine?.state === 'done' && mine.run ? timelineOf(mine.run) : undefined;
  const exposed = tl ? tl.totals.reduce((a, x) => Math.max(a, x.exposedMs), 0) : 0;
  return html`<div class="totals" data-moe-totals=${mine?.state ?? m.state}>
    <div>
      t = <strong data-shown-tp>${l.tp}</strong>${l.tp > 1 && l.sp ? ' with SP' : ''} · MoE layer on the rank workers:
      ${
        tl
          ? html`step <strong data-step-ms=${tl.stepMs}>${formatMs(tl.stepMs)}</strong> recorded (slowest: rank
              ${tl.slowestRank}) · exposed communication, worst rank:
              <strong data-exposed-ms=${exposed}>${formatMs(exposed)}</strong>`
          : mine?.state === 'refused' || mine?.state === 'failed'
            ? `${mine.state === 'refused' ? 'cannot run' : 'failed'}: ${mine.error}`
            : 'running…'
      }
    </div>
    ${transport}
  </div>`;
}

/** The MoE block's plan of `s` (moePlan), with the shown run's rows once it ran: the top card's and the shapes card's. */
export function moePlanOfRun(m: MoeRunState, s: Settings) {
  const mine = shownRun(m, s);
  return moePlan(moeRunArgsOf(s), mine?.state === 'done' ? mine.run : undefined);
}

/** The top card's MoE block, stage by stage with its local shapes (moePlan), the run's rows once it ran. */
export function renderMoePlan(m: MoeRunState, s: Settings): TemplateResult {
  return html`<tp-moe-plan .plan=${moePlanOfRun(m, s)}></tp-moe-plan>`;
}

/**
 * The top card's oracle badge with experts set: the MoE run's verdict against one device from its
 * own reports (moeOracleVerdict), checking while its rank workers run, or why there is none.
 */
export function renderMoeBadge(m: MoeRunState, s: Settings, gpu: boolean): TemplateResult {
  const mine = shownRun(m, s);
  const verdict = mine?.state === 'done' && mine.run ? moeOracleVerdict(mine.run) : null;
  const ended = mine?.state === 'refused' || mine?.state === 'failed';
  const reason = !gpu
    ? 'no WebGPU here: the layer with its MoE block did not run'
    : ended
      ? `the MoE run ${mine.state === 'refused' ? 'cannot run' : 'failed'}: ${mine.error}`
      : mine?.state === 'done'
        ? 'the MoE run made no check'
        : 'the layer with its MoE block against one device';
  return html`<tp-oracle-badge
    .moe=${verdict ?? undefined}
    .tp=${moeWorld(moeRunArgsOf(s).layout)}
    ?checking=${gpu && !ended && !verdict && mine?.state !== 'done'}
    reason=${reason}
  ></tp-oracle-badge>`;
}
