/**
 * Import layers of src/ (bottom → top). A module may import only from its own layer or the
 * layers below it; the pure layers (no WebGPU, no workers, no DOM) may not import kernels/ or
 * anything above them; comlink is for the worker boundaries (ranks/ and ui/ only), lit and d3 belong to
 * the view (ui/ only). `npm test` runs this (`depcruise src scripts`, in scripts/repo/checks.mjs); there are no exceptions.
 */
const layers = [
  'core',
  'mesh',
  'reference',
  'kernels',
  'comm',
  'parallel',
  'hardware',
  'accounting',
  'megatron',
  'schedule',
  'kineto',
  'projection',
  'calibrate',
  'export',
  'ranks',
  'session',
  'ui',
  'bench',
];
/**
 * Rooms of src/projection/ (bottom → top): layer pricing (kernels, priced ops, the layer's timeline
 * and pieces); the pipeline (split, schedule, memory timeline, stage model); links and placement
 * (group links, placement, link sharing, the CP ring and DP buckets priced on them); the step's
 * assembly; the studies built on steps (advisor, ablation, published comparison, breakdown, measured
 * vs projected, link loads).
 */
const projectionRooms = ['layer', 'pipeline', 'links', 'step', 'studies'];
const dir = (l) => `^src/${l}/`;
const above = (i) => [...layers.slice(i + 1).map(dir), '^src/main[.]ts$', '^scripts/'];
const pure = require('./scripts/repo/pure-layers.cjs');

/** src/ui/ rooms, bottom → top: shared < settings (the hash's settings table and what derives from it) < the views < shell (the page). */
const uiRooms = [['shared'], ['settings'], ['classroom', 'cluster', 'gemm', 'timeline', 'trace'], ['shell']];
const uiRoom = (rooms) => `^src/ui/(${rooms.join('|')})/`;

module.exports = {
  forbidden: [
    ...layers.map((l, i) => ({
      name: `layer-${l}`,
      comment: `src/${l}/ sits below ${layers.slice(i + 1).join(', ')} and scripts/: import downward only (move the shared piece down, or pass it in).`,
      severity: 'error',
      from: { path: dir(l) },
      to: { path: above(i) },
    })),
    // Rooms of src/projection/ (bottom → top): a room imports only its own and the rooms below it.
    ...projectionRooms.map((r, i) => ({
      name: `projection-${r}`,
      comment: `src/projection/${r}/ sits below ${projectionRooms.slice(i + 1).join(', ') || 'nothing'} in src/projection/: import downward only.`,
      severity: 'error',
      from: { path: `^src/projection/${r}/` },
      to: {
        path: [...projectionRooms.slice(i + 1).map((u) => `^src/projection/${u}/`), '^src/projection/[^/]+[.]ts$'],
      },
    })),
    {
      name: 'projection-in-rooms',
      comment: 'Every module of src/projection/ lives in one of its rooms.',
      severity: 'error',
      from: { path: '^src/projection/[^/]+[.]ts$' },
      to: {},
    },
    ...uiRooms.slice(0, -1).map((room, i) => ({
      name: `ui-${room.length > 1 ? 'views' : room[0]}`,
      comment: `src/ui/ rooms import downward only (shared < settings < views < shell): a view takes the settings from settings/, never from shell/.`,
      severity: 'error',
      from: { path: uiRoom(room) },
      to: { path: uiRoom(uiRooms.slice(i + 1).flat()) },
    })),
    {
      name: 'pure-layers',
      comment: `${pure.join(', ')} are pure (Node-testable): no WebGPU kernels, no workers, no DOM.`,
      severity: 'error',
      from: { path: `^src/(${pure.join('|')})/` },
      to: { path: ['^src/kernels/', '^node_modules/(comlink|lit|@lit|d3)'] },
    },
    {
      name: 'comlink-at-worker-boundaries',
      comment:
        "Workers are started and served only by ranks/ (the rank workers), ui/ (the page's trace reader) and scripts/device/node-rank* (the rank workers as Node threads): comlink nowhere else.",
      severity: 'error',
      from: { pathNot: ['^src/(ranks|ui)/', '^scripts/device/node-rank'] },
      to: { path: '^node_modules/comlink/' },
    },
    {
      name: 'ui-imported-by-the-page-only',
      comment:
        'src/ui/ is the view: only it, src/main.ts and the page benches (src/bench/) import it. What a script or a lower layer needs from it (formatting, derived numbers) moves down.',
      severity: 'error',
      from: { pathNot: ['^src/(ui|bench)/', '^src/main[.]ts$'] },
      to: { path: '^src/ui/' },
    },
    {
      name: 'view-libraries-in-ui-only',
      comment: 'lit elements and d3 belong to the view (src/ui/).',
      severity: 'error',
      from: { pathNot: '^src/ui/' },
      to: { path: '^node_modules/(lit|@lit|lit-html|lit-element|d3[^/]*)/' },
    },
    {
      name: 'rank-pools-from-session',
      comment:
        'Rank pools are created in one module, src/session/pools.ts (createLayerPool, createCommPool); elsewhere ranks/pool.ts is imported for its types only.',
      severity: 'error',
      from: { pathNot: ['^src/ranks/', '^src/session/pools[.]ts$'] },
      to: { path: '^src/ranks/pool[.]ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-circular',
      comment: 'Modules form no import cycles.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'Every import resolves.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true, pathNot: '[?]raw$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    exclude: { path: '[?]raw$' },
  },
};
