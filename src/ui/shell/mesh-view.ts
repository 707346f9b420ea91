// The mesh run on screen (a template of <tp-app>): where it stands, its oracle, and its schedule as the ranks ran it.
import { html, nothing, type TemplateResult } from 'lit';
import { maxMeshRanks } from '../../mesh/rank-layout.ts';
import type { OracleReport } from '../../parallel/oracle.ts';
import '../cluster/tp-pipeline-view.ts';
import { meshIssues } from '../settings/mesh-settings.ts';
import type { Settings } from '../settings/state.ts';
import type { MeshRunState } from './mesh-runs.ts';

const exp = (x: number): string => x.toExponential(2);

/** The oracle's verdict in a line: every tensor within its tolerance, or the ones that are not. */
function oracleLine(o: OracleReport): TemplateResult {
  const bad = o.entries.filter((e) => !e.pass);
  return html`<p data-mesh-oracle=${o.pass ? 'pass' : 'fail'} class=${o.pass ? 'note' : 'error'}>
    Oracle: the loss of every micro-batch, every parameter's gradient and every weight after two Adam steps against
    one device running the same L layers on the same micro-batches —
    ${
      o.pass
        ? html`<strong>pass</strong>, ${o.entries.length} tensors, worst ${o.worst.tensor} ${exp(o.worst.maxAbs)}
          (tolerance ${exp(o.worst.tol)}).`
        : html`<strong>fail</strong>: ${bad.map((e) => `${e.tensor} ${exp(e.maxAbs)} > ${exp(e.tol)}`).join('; ')}.`
    }
  </p>`;
}

/**
 * The mesh card of the timeline view, when the settings run a mesh (p > 1 or d > 1): the rule that
 * stops it (the message itself sits at its control), the run in flight, its failure, or the step
 * the rank workers ran in <tp-pipeline-view> with the oracle.
 */
export function renderMesh(m: MeshRunState, s: Settings, gpu: boolean): TemplateResult {
  const refused = meshIssues(s).length > 0;
  const n = s.tp * s.pp * s.dp;
  const r = m.result;
  return html`<section
    class="card"
    data-mesh
    data-busy=${String(m.busy)}
    data-mesh-shown=${m.shownHash}
    data-mesh-ranks=${r?.places.length ?? 0}
  >
    <h2>Rank mesh: t ${s.tp} × p ${s.pp} × d ${s.dp} = ${n} rank workers</h2>
    ${
      refused
        ? html`<p class="note" data-mesh-status>
          The mesh does not run: fix the setting marked in red (at most ${maxMeshRanks} ranks, L split as Megatron
          does, the schedule's rules); the TP layer and the cluster panel below still run.
        </p>`
        : !gpu
          ? html`<p class="note" data-mesh-status>No WebGPU here: the mesh runs on rank workers with a GPUDevice each.</p>`
          : m.busy
            ? html`<p class="note" data-mesh-status>${m.progress || 'starting the mesh…'}</p>`
            : nothing
    }
    ${m.error ? html`<p class="error" role="alert" data-mesh-error>The mesh run failed: ${m.error}</p>` : nothing}
    ${
      r
        ? html`${oracleLine(r.oracle)}
          <tp-pipeline-view .measured=${r}></tp-pipeline-view>`
        : nothing
    }
  </section>`;
}
