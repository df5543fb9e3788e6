// GPU confinement. The agent decides which devices a job gets (prover-agent/src/agent/gpus.ts)
// and passes them as ctx.gpus; the engine only confines the tool to them.

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
