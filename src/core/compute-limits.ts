/** The device limits a kernel checks before it dispatches (a subset of GPUSupportedLimits). */
export interface ComputeLimits {
  readonly maxStorageBufferBindingSize: number;
  readonly maxBufferSize: number;
  readonly maxComputeWorkgroupsPerDimension: number;
}
