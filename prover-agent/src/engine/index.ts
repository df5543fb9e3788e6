// Engine registry: engine name -> implementation. Engines load lazily so an agent
// only pays for what it serves. What the fleet knows of each engine without loading
// it (GPUs, names) is the protocol's table (prover-agent/src/protocol/engines.ts).
import { ENGINE_NAMES } from '../protocol.ts';
import type { Engine, EngineOptions } from './types.ts';

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
