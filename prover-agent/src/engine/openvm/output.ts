// Reading the zkVM tool's output: metric lines, the execution's public values,
// proving phases, and which failures are the caller's fault.
import type { EngineMetrics, ProvePhase } from '../types.ts';

// Lines `cargo openvm run` prints (commands/run.rs): meter mode prints the
// instruction count and its cost estimate in cells, segment mode the count and
// the number of proving segments.
const PRINTED_METRICS: [RegExp, keyof EngineMetrics][] = [
  [/^Number of instructions executed:\s*(\d+)\s*$/, 'num_instructions'],
  [/^Total cost:\s*(\d+)\s*$/, 'cells_used'],
  [/^Total segments:\s*(\d+)\s*$/, 'num_segments'],
];
// Best effort: the names of openvm's metric gauges as `key=value` fields, which
// tracing prints when the tool logs at info level. Not a documented format.
const TRACED_METRICS: [RegExp, keyof EngineMetrics][] = [
  [/\btotal_cycles=(\d+)\b/, 'total_cycle'],
  [/\btotal_cells_used=(\d+)\b/, 'cells_used'],
  [/\bnum_segments=(\d+)\b/, 'num_segments'],
  [/\binstret=(\d+)\b/, 'num_instructions'],
];

/** Metrics a line carries, or null. */
export function parseMetrics(line: string): EngineMetrics | null {
  const found: EngineMetrics = {};
  for (const [re, key] of [...PRINTED_METRICS, ...TRACED_METRICS]) {
    const m = re.exec(line);
    if (m) found[key] = Number(m[1]);
  }
  return Object.keys(found).length ? found : null;
}

const EXECUTION_OUTPUT = /^Execution output:\s*(.*)$/;

/** `Execution output: [1, 2, 255]` (Rust Debug of the public-value bytes) as 0x hex, or null. */
export function parsePublicValues(line: string): string | null {
  const m = EXECUTION_OUTPUT.exec(line);
  if (!m) return null;
  const list = /\[([^\]]*)\]/.exec(m[1]);
  if (!list) return '0x';
  const bytes = list[1]
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  if (bytes.some((b) => !Number.isInteger(b) || b < 0 || b > 255)) return null;
  return '0x' + Buffer.from(bytes).toString('hex');
}

// What `run` itself prints; everything else on its stdout came from the guest.
const TOOL_STDOUT = [EXECUTION_OUTPUT, ...PRINTED_METRICS.map(([re]) => re), /not found, using default application configuration$/];

export function guestStdout(lines: string[]): string {
  const guest = lines.filter((l) => !TOOL_STDOUT.some((re) => re.test(l)));
  return guest.length ? guest.join('\n') + '\n' : '';
}

const ERROR_TAIL_LINES = 8;
const ERROR_MAX_CHARS = 2000;

/** The last non-empty stderr lines, as a job's error_message. */
export function errorTail(stderrTail: string[], fallback: string): string {
  const lines = stderrTail.map((l) => l.trimEnd()).filter((l) => l.trim() !== '');
  const text = lines.slice(-ERROR_TAIL_LINES).join('\n');
  if (!text) return fallback;
  return text.length > ERROR_MAX_CHARS ? '…' + text.slice(-ERROR_MAX_CHARS) : text;
}

// A failing tool run is the host's problem (retry elsewhere) rather than the
// caller's when it says so: GPU or memory trouble, missing keys, a full disk.
const HOST_FAILURES = [
  /\bCUDA\b|cuda(Error|Malloc)|CUDA_ERROR|\bGPU\b|no CUDA-capable device/i,
  /out of memory|memory allocation of \d+ bytes failed|Cannot allocate memory/i,
  /No space left on device/i,
  /Failed to read (aggregation|internal-recursive|root|app) (proving|verifying) key/i,
  /Run 'cargo openvm (setup|keygen)'/,
  /could not find Cargo\.toml|manifest_path must be a path/i,
];

export function isHostFailure(stderrTail: string[]): boolean {
  const text = stderrTail.join('\n');
  return HOST_FAILURES.some((re) => re.test(text));
}

// The tool prints little about its progress at its default log level. When it
// logs at info level (RUST_LOG), tracing lines naming the aggregation layers mark
// the step from the app proof to post-processing. Only tracing-shaped lines
// count: the guest runs again while proving and may print anything.
const TRACING_LINE = /\b(INFO|DEBUG|TRACE)\b/;
const AGGREGATION_STARTS = /\b(leaf|internal[_ -]?recursive|internal|root|halo2|aggregat\w*)\b/i;

/** Phase announcements for the output of `prove <kind>`. */
export function phaseTracker(kind: 'app' | 'stark' | 'evm', announce: (phase: ProvePhase) => void) {
  let aggregating = false;
  return {
    line(line: string) {
      if (kind !== 'app' && !aggregating && TRACING_LINE.test(line) && AGGREGATION_STARTS.test(line)) {
        aggregating = true;
        announce('AppProvingDone');
        announce('PostProcessing');
      }
    },
    done() {
      if (kind === 'app') announce('AppProvingDone');
    },
  };
}
