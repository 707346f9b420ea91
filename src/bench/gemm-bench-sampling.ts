// How many timed runs bench:gemm takes per shape beyond the requested minimum (see timeRuns in
// gemm-bench.ts). Pure: the CLI prints them without loading the kernels.

/** Rounds go on past the requested runs while some variant's timed runs span less than this, ms… */
export const minSampledMs = 250;
/** …up to this many rounds in all. */
export const maxRuns = 25;
