// The classroom view's mesh card (a template of <tp-app>): the pipeline and ZeRO-1 steps of the page's mesh run.
import { html, type TemplateResult } from 'lit';
import { pageTraining } from '../../session/mesh-runner.ts';
import '../classroom/tp-mesh-classroom.ts';
import { meshIssues } from '../settings/mesh-settings.ts';
import type { Settings } from '../settings/state.ts';
import type { MeshRunState } from './mesh-runs.ts';

/** The card: the steps once the mesh run of these settings is back, else where it stands (or the rule that stops it). */
export function renderMeshClassroom(m: MeshRunState, s: Settings, gpu: boolean): TemplateResult {
  const status = !gpu
    ? 'The mesh steps show numbers from the rank workers, which need WebGPU.'
    : meshIssues(s).length
      ? 'Fix the rank-mesh setting marked in red to run the mesh.'
      : m.error
        ? `The mesh run failed: ${m.error}`
        : m.busy || !m.result
          ? m.progress || 'waiting for the mesh run…'
          : '';
  return html`<section class="card" data-mesh-classroom data-busy=${String(m.busy)} data-mesh-shown=${m.shownHash}>
    <h2>The rank mesh, step by step: t ${s.tp} × p ${s.pp} × d ${s.dp}</h2>
    <tp-mesh-classroom .result=${m.result} .adam=${pageTraining.adam} .status=${status}></tp-mesh-classroom>
  </section>`;
}
