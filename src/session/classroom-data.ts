import type { ClassroomRuns } from '../parallel/classroom.ts';
import type { LayerConfig } from '../parallel/config.ts';
import type { GemmChoices } from '../ranks/layer-programs.ts';
import type { LayerWorkerPrograms } from './layer-run.ts';
import type { RankPool } from '../ranks/pool.ts';

/**
 * Runs the classroom MLP on the pool's t ranks (real WebGPU, real collectives): TP=t without SP,
 * TP=t with SP when s % t = 0, and TP=1 on rank 0 alone; returns every rank's intermediates.
 */
export async function loadClassroomRuns(
  pool: RankPool<LayerWorkerPrograms>,
  c: LayerConfig,
  choices?: GemmChoices,
  onProgress: (line: string) => void = () => {},
): Promise<ClassroomRuns> {
  if (pool.size !== c.tp) throw new Error(`loadClassroomRuns: the pool has ${pool.size} ranks but t = ${c.tp}.`);
  const config = { ...c, sp: false };
  onProgress(`TP=${c.tp} MLP and attention on ${c.tp} ranks…`);
  const tp = await pool.run('classroomStep', { config, choices });
  let sp;
  if (c.s % c.tp === 0) {
    onProgress(`TP=${c.tp} with sequence parallelism…`);
    sp = await pool.run('classroomStep', { config: { ...config, sp: true }, choices });
  }
  onProgress('TP=1 on rank 0 alone…');
  const [reference] = await pool.run('classroomStep', { config: { ...config, tp: 1 }, choices, solo: true }, [0]);
  return { config, tp, sp, reference };
}
