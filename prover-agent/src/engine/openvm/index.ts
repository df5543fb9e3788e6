import type { EngineOptions } from '../index.ts';
import type { Engine } from '../types.ts';

export function createOpenvmEngine(_options: EngineOptions): Engine {
  throw new Error('openvm engine not implemented yet');
}
