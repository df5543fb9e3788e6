// The one table of engines: what the service must know of each without loading it.
// The Worker claims, records, limits (quotas) and bills a job on gpusUsed(); the
// agent pins the job to that many devices and runs GPU-less engines in warm workers.

export interface EngineTraits {
  /** Whether a job of the engine runs on GPUs. A GPU-less engine's jobs take any `num_gpus`, hold none, and bill as one. */
  usesGpus: boolean;
  /** The most GPUs one job uses, whatever it asked for; absent: what it asked for. */
  maxGpus?: number;
  /**
   * Whether it proves with a config's published key files: the agent then gives it the
   * digests the service reports (GET /internal/v1/configs/{id} `keys`) to check the
   * host's copies against before proving.
   */
  usesPublishedKeys?: boolean;
}

export const ENGINES = {
  dev: { usesGpus: false },
  // `cargo openvm` proves on one GPU (openvm v2.0.1 docs install.mdx: "Currently
  // only single GPU support is available through the CLI").
  openvm: { usesGpus: true, maxGpus: 1, usesPublishedKeys: true },
} as const satisfies Record<string, EngineTraits>;

export type EngineName = keyof typeof ENGINES;
export const ENGINE_NAMES = Object.keys(ENGINES) as EngineName[];

/** The traits of engine `name`, or undefined for an engine this build does not know. */
export function engineTraits(name: string): EngineTraits | undefined {
  return Object.hasOwn(ENGINES, name) ? ENGINES[name as EngineName] : undefined;
}

/**
 * GPUs a job of `engine` that asked for `requested` actually uses: none for a GPU-less
 * engine, at most the engine's maxGpus otherwise (an openvm job asking for 8, as
 * clients do by default, is accepted, runs on one GPU, and holds and is billed for
 * one). An engine not in the table uses what it asked for.
 */
export function gpusUsed(engine: string, requested: number): number {
  const traits = engineTraits(engine);
  if (!traits) return requested;
  if (!traits.usesGpus) return 0;
  return traits.maxGpus === undefined ? requested : Math.min(requested, traits.maxGpus);
}

/**
 * What a job holding `gpus` (gpusUsed) runs on, as the service says it: "1 GPU",
 * "2 GPUs", or "the CPU" (a GPU-less engine's job holds none).
 */
export const runsOnText = (gpus: number): string => (gpus === 0 ? 'the CPU' : gpus === 1 ? '1 GPU' : `${gpus} GPUs`);

/** The engines whose jobs use no GPU. */
export const GPU_LESS_ENGINE_NAMES: readonly EngineName[] = ENGINE_NAMES.filter((name) => !ENGINES[name].usesGpus);
