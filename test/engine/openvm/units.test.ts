// The pure parts of the openvm engine: version → flag mapping, GPU picking,
// reading the tool's output.
import { describe, expect, it } from 'vitest';
import { parseVersion, selectCliMapping, shellJoin } from '../../../prover-agent/src/engine/openvm/commands.ts';
import { pickGpus } from '../../../prover-agent/src/engine/openvm/index.ts';
import { errorTail, guestStdout, isHostFailure, parseMetrics, parsePublicValues, phaseTracker } from '../../../prover-agent/src/engine/openvm/output.ts';
import type { ProvePhase } from '../../../prover-agent/src/engine/types.ts';

describe('selectCliMapping', () => {
  it('maps every 2.x version to the 2.x table', () => {
    for (const v of ['v2.0.0', '2.0.0', '2.0', '2.0.0-beta.2', 'v2.0.1']) {
      expect(selectCliMapping(v)).toMatchObject({ mapping: { label: '2.x' }, warning: null });
    }
  });

  it('warns for a minor newer than the sources the table was read from', () => {
    expect(selectCliMapping('v2.3.1').warning).toBe('openvm 2.3.1: using the 2.x command-line mapping read from 2.0 sources');
  });

  it('refuses unknown majors and unreadable versions', () => {
    expect(() => selectCliMapping('v1.4.0')).toThrow(/no command-line mapping for openvm 1\.4\.0/);
    expect(() => selectCliMapping('v3.0.0')).toThrow(/no command-line mapping/);
    expect(() => selectCliMapping('latest')).toThrow(/cannot read openvm_version 'latest'/);
  });

  it('reads versions out of `--version` text', () => {
    expect(parseVersion('cargo-openvm 2.0.0-beta.2 (abc1234 2026-01-01)')).toEqual({ major: 2, minor: 0, patch: 0, text: '2.0.0-beta.2' });
  });
});

describe('shellJoin', () => {
  it('quotes only what a shell would split or expand', () => {
    expect(shellJoin(['cargo', 'openvm', '--input', '/tmp/a b/in.json', "it's"])).toBe(`cargo openvm --input '/tmp/a b/in.json' 'it'\\''s'`);
  });
});

describe('pickGpus', () => {
  it('takes the lowest free ordinals', () => {
    expect(pickGpus([5, 1, 3, 0], 2)).toEqual([0, 1]);
    expect(pickGpus([3, 3, 1], 2)).toEqual([1, 3]);
  });

  it('returns null when too few are free, and nothing for zero', () => {
    expect(pickGpus([0, 1], 3)).toBeNull();
    expect(pickGpus([], 0)).toEqual([]);
  });

  it('rejects a negative or fractional count', () => {
    expect(() => pickGpus([0], -1)).toThrow(RangeError);
    expect(() => pickGpus([0], 1.5)).toThrow(RangeError);
  });
});

describe('tool output', () => {
  it('reads the metric lines `run` prints', () => {
    expect(parseMetrics('Number of instructions executed: 1234')).toEqual({ num_instructions: 1234 });
    expect(parseMetrics('Total cost: 99')).toEqual({ cells_used: 99 });
    expect(parseMetrics('Total segments: 3')).toEqual({ num_segments: 3 });
    expect(parseMetrics('2026-01-01T00:00:00Z  INFO prove: segment=0 total_cycles=10 total_cells_used=20')).toEqual({ total_cycle: 10, cells_used: 20 });
    expect(parseMetrics('guest says: Total cost: a lot')).toBeNull();
  });

  it('turns the printed public-value bytes into hex', () => {
    expect(parsePublicValues('Execution output: [0, 1, 255]')).toBe('0x0001ff');
    expect(parsePublicValues('Execution output: []')).toBe('0x');
    expect(parsePublicValues('Execution output: [256]')).toBeNull();
    expect(parsePublicValues('something else')).toBeNull();
  });

  it('keeps only the guest’s lines of run’s stdout', () => {
    expect(guestStdout(['hello', 'Execution output: [1]', 'Number of instructions executed: 5', 'bye'])).toBe('hello\nbye\n');
    expect(guestStdout(['Execution output: [1]'])).toBe('');
  });

  it('makes an error message of the last non-empty stderr lines', () => {
    const lines = Array.from({ length: 12 }, (_, i) => `line ${i}`);
    expect(errorTail([...lines, '', '  '], 'fallback')).toBe(lines.slice(-8).join('\n'));
    expect(errorTail([], 'fallback')).toBe('fallback');
  });

  it('tells host trouble from the caller’s', () => {
    expect(isHostFailure(['Error: CUDA error: out of memory'])).toBe(true);
    expect(isHostFailure(["Run 'cargo openvm setup' first to generate it"])).toBe(true);
    expect(isHostFailure(['Error: guest panicked at src/main.rs:3'])).toBe(false);
  });

  it('infers post-processing from tracing lines only', () => {
    const phases: ProvePhase[] = [];
    const track = phaseTracker('stark', (p) => phases.push(p));
    track.line('guest: the root of the tree is 5');
    expect(phases).toEqual([]);
    track.line('2026-01-01T00:00:00Z  INFO agg: leaf aggregation layer=0');
    track.line('2026-01-01T00:00:00Z  INFO agg: internal aggregation layer=1');
    track.done();
    expect(phases).toEqual(['AppProvingDone', 'PostProcessing']);
  });
});
