/**
 * The pure layers of src/ (Node-testable: no WebGPU kernels, no workers, no DOM). One list for the
 * dependency-cruiser rule that holds them pure (.dependency-cruiser.cjs) and for the mutation-testing
 * script that may mutate only them (scripts/repo/mutate.ts).
 */
module.exports = [
  'core',
  'mesh',
  'reference',
  'parallel',
  'hardware',
  'accounting',
  'megatron',
  'schedule',
  'kineto',
  'projection',
  'calibrate',
  'export',
];
