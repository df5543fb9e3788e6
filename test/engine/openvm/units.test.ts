// The pure parts of the openvm engine: version policy → flag mapping, GPU
// picking, reading the tool's output, and which configs the tool can key.
import { describe, expect, it } from 'vitest';
import { pickGpus } from '../../../prover-agent/src/agent/gpus.ts';
import { selectCliMapping, shellJoin } from '../../../prover-agent/src/engine/openvm/commands.ts';
import {
  classifyFailure,
  errorTail,
  guestStdout,
  parseMetrics,
  parsePublicValues,
  proveOutputReader,
} from '../../../prover-agent/src/engine/openvm/output.ts';
import { parseVersion, versionProblem, type ProvePhase } from '../../../prover-agent/src/protocol.ts';

describe('selectCliMapping', () => {
  it('maps 2.0.0 final and later 2.0 releases to the 2.x table', () => {
    for (const v of ['v2.0.0', '2.0.0', '2.0', 'v2.0.1']) {
      expect(selectCliMapping(v)).toMatchObject({ mapping: { label: '2.x' }, warning: null });
      expect(versionProblem(v)).toBeNull();
    }
  });

  it('refuses pre-releases, whose flags and JSON differ', () => {
    for (const v of ['2.0.0-beta.2', 'v2.0.0-rc.1', '2.1.0-alpha']) {
      expect(versionProblem(v)).toMatch(/is a pre-release; this agent maps final releases only/);
      expect(() => selectCliMapping(v)).toThrow(/pre-release/);
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
    expect(parseVersion('cargo-openvm 2.0.0-beta.2 (abc1234 2026-01-01)')).toEqual({
      major: 2,
      minor: 0,
      patch: 0,
      prerelease: 'beta.2',
      text: '2.0.0-beta.2',
    });
    expect(parseVersion('cargo-openvm v2.0.1 (0123abc) [cuda]')).toEqual({ major: 2, minor: 0, patch: 1, prerelease: null, text: '2.0.1' });
  });
});

describe('shellJoin', () => {
  it('quotes only what a shell would split or expand', () => {
    expect(shellJoin(['cargo', 'openvm', '--input', '/tmp/a b/in.json', "it's"])).toBe(
      `cargo openvm --input '/tmp/a b/in.json' 'it'\\''s'`,
    );
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
    // Names the tool never prints are not read (total_cycles=, total_cells_used=, instret=).
    expect(parseMetrics('INFO     prove segment=0 total_cycles=10 total_cells_used=20 num_segments=2 instret=5')).toBeNull();
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
    expect(classifyFailure(1, null, ['Error: CUDA error: out of memory'])).toBe('host');
    expect(classifyFailure(1, null, ["Run 'cargo openvm setup' first to generate it"])).toBe('host');
    expect(classifyFailure(1, null, ['Error: reading from /c/openvm/app.pk failed with the following error:'])).toBe('host');
    expect(classifyFailure(1, null, ['Error: execution failed at pc 1234, err: program exit code 3'])).toBe('caller');
    expect(
      classifyFailure(101, null, ["thread 'main' panicked at crates/sdk/src/halo2_params.rs:47:38:", 'Failed to open params file']),
    ).toBe('host');
    expect(classifyFailure(101, null, ['Execution cost 3300000000000 exceeded maximum allowed cost of 3221225472000'])).toBe('caller');
    expect(classifyFailure(2, null, ["error: unexpected argument '--agg-prefix-pk' found"])).toBe('command-line');
    expect(classifyFailure(null, 'SIGKILL', [])).toBe('host');
  });

  it('announces the end of app proving from the INFO span trees only', () => {
    const phases: ProvePhase[] = [];
    const reader = proveOutputReader('stark', (p) => phases.push(p));
    reader.line('guest: app_prove agg_layer prove_segment');
    expect(phases).toEqual([]);
    reader.line('INFO     app_prove [ 2.00s | 100.00% ] group: "app_proof"');
    reader.line('INFO     ┝━ prove_segment [ 1.00s | 50.00% ] segment: 0');
    reader.line('INFO     ┕━ prove_segment [ 1.00s | 50.00% ] segment: 1');
    expect(phases).toEqual(['AppProvingDone', 'PostProcessing']);
    reader.line('INFO     agg_layer [ 1.00s | 100.00% ] group: "leaf"');
    reader.done();
    expect(phases).toEqual(['AppProvingDone', 'PostProcessing']);
    expect(reader.segments).toBe(2);
  });

  it('without INFO output, announces app proving done when the command ends', () => {
    const phases: ProvePhase[] = [];
    const reader = proveOutputReader('app', (p) => phases.push(p));
    reader.done();
    expect(phases).toEqual(['AppProvingDone']);
    expect(reader.segments).toBeNull();
  });
});
