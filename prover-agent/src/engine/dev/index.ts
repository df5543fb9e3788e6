import type { EngineOptions } from '../index.ts';
import type { Engine } from '../types.ts';

export function createDevEngine(_options: EngineOptions): Engine {
  throw new Error('dev engine not implemented yet');
}
