// The page's MoE cards (templates of <tp-app>): the timeline view's card and the classroom view's steps, both from the one MoE run of the settings.
import { html, type TemplateResult } from 'lit';
import '../classroom/tp-classroom-moe.ts';
import '../timeline/tp-moe-view.ts';
import { moeRunArgsOf } from '../settings/moe-settings.ts';
import { hashFromSettings, type Settings } from '../settings/state.ts';
import type { MoeRunState } from './moe-runs.ts';

/** The run shown for `s`: the state's run when it ran these settings' args, else none yet. */
function shownRun(m: MoeRunState, s: Settings) {
  const key = JSON.stringify(moeRunArgsOf(s));
  return m.args && JSON.stringify(m.args) === key ? m : undefined;
}

/** The timeline view's MoE card: the run's trace on a <tp-timeline>, the heat map, the straggler, the dispatch matrix, M036; a link to the classroom's steps. */
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
