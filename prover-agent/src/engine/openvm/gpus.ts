// GPU placement. The runner decides which devices a job gets (from the job's
// num_gpus and the agent's free devices, e.g. with pickGpus) and passes them as
// ctx.gpus; the engine only confines the tool to them.

/**
 * The `n` lowest-numbered free device ordinals, or null when fewer than `n` are
 * free (the job waits). Lowest-first keeps placements stable and leaves the
 * high-numbered devices together for the next job.
 */
export function pickGpus(free: readonly number[], n: number): number[] | null {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`pickGpus: n must be a non-negative integer, got ${n}`);
  const distinct = [...new Set(free)].filter((d) => Number.isInteger(d) && d >= 0).sort((a, b) => a - b);
  return distinct.length >= n ? distinct.slice(0, n) : null;
}

/**
 * Environment that confines the tool to `gpus`. Ordinals are nvidia-smi's
 * (PCI bus order), so CUDA is told to number devices the same way. With no
 * assignment the agent's own environment stands (a GPU-less run or an operator's
 * explicit CUDA_VISIBLE_DEVICES).
 */
export function gpuEnv(gpus: readonly number[]): Record<string, string> {
  if (gpus.length === 0) return {};
  return { CUDA_VISIBLE_DEVICES: gpus.join(','), CUDA_DEVICE_ORDER: 'PCI_BUS_ID' };
}
