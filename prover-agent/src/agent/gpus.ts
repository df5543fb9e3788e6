// GPU placement: which of the agent's free devices a claimed job runs on. The number
// comes from the protocol's engine table (gpusUsed: none for a GPU-less engine, at
// most the engine's limit otherwise); the engine only confines its tool to the
// devices it is given (ctx.gpus; openvm: gpuEnv in engine/openvm/gpus.ts).
import { gpusUsed } from '../protocol.ts';

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
 * The devices a job of `engine` that asked for `numGpus` gets out of `free`. The
 * service only hands out jobs that fit the free GPUs the agent declared and asks for
 * no more than the engine uses; the limit is applied here too (an older service may not).
 */
export function gpusForJob(free: readonly number[], engine: string, numGpus: number): number[] {
  return pickGpus(free, gpusUsed(engine, numGpus)) ?? [];
}
