// Engine registry: engine name -> implementation. Engines load lazily so an agent
// only pays for what it serves.
import type { Engine } from './types.ts';

export interface EngineOptions {
  /** openvm: directory holding one subdirectory per config id (see setup-config). */
  configsDir?: string;
  /** openvm: the cargo executable whose `openvm` subcommand is the zkVM tool. */
  cargoPath?: string;
  /** Per-operation time limits in seconds, by operation name. */
  timeouts?: Partial<Record<'commit' | 'execute' | 'prove' | 'verify', number>>;
}

export const ENGINE_NAMES = ['dev', 'openvm'] as const;
export type EngineName = (typeof ENGINE_NAMES)[number];

/** Whether an engine needs GPUs (the agent assigns them); known without loading it. */
export const ENGINE_USES_GPU: Record<EngineName, boolean> = { dev: false, openvm: true };

export async function loadEngine(name: string, options: EngineOptions = {}): Promise<Engine> {
  switch (name) {
    case 'dev':
      return (await import('./dev/index.ts')).createDevEngine(options);
    case 'openvm':
      return (await import('./openvm/index.ts')).createOpenvmEngine(options);
    default:
      throw new Error(`unknown engine '${name}' (known: ${ENGINE_NAMES.join(', ')})`);
  }
}
