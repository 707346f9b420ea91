// The page's elements that the first timeline does not draw, in chunks of their own: the first paint
// parses and runs only the shell, the controls and the timeline. A custom element used before its
// module loads upgrades in place when it does (lit keeps properties set before the upgrade).
import { afterNextPaint } from '../shared/next-paint.ts';
import type { MainView } from '../settings/state.ts';

let loading: Promise<unknown> | undefined;

/** Loads every later element once. */
const loadAll = (): Promise<unknown> =>
  (loading ??= Promise.all([
    import('../classroom/tp-classroom.ts'),
    import('../gemm/tp-gemm-view.ts'),
    import('../trace/tp-trace-view.ts'),
    import('../cluster/tp-cluster-panel.ts'),
    import('../cluster/tp-machine-picture.ts'),
    import('../cluster/tp-advisor-panel.ts'),
    import('../cluster/tp-ablation-panel.ts'),
    import('../timeline/tp-live-memory.ts'),
    import('./tp-exports.ts'),
  ]));

/**
 * Loads the later elements: at once when the page opens on a view the timeline is not (classroom,
 * GEMM, trace), else after the first timeline has painted.
 */
export function loadLaterElements(view: MainView): Promise<unknown> {
  if (loading || view !== 'timeline') return loadAll();
  return afterNextPaint().then(loadAll);
}
