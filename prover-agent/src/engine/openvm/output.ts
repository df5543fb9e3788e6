// Reading the zkVM tool's output: the lines it really prints (commands.ts
// PRINTED, with their sources), the proving phases they reveal, and whose fault
// a failure is.
import type { EngineMetrics, ProofType, ProvePhase } from '../../protocol.ts';
import { PRINTED } from './commands.ts';

// `run` prints these with println! whatever the log level: meter mode the
// instruction count and the cost in trace cells, segment mode the count and the
// number of segments.
const PRINTED_METRICS: [RegExp, keyof EngineMetrics][] = [
  [PRINTED.instructions, 'num_instructions'],
  [PRINTED.totalCost, 'cells_used'],
  [PRINTED.totalSegments, 'num_segments'],
];

/** Metrics a line of `run` output carries, or null. */
export function parseMetrics(line: string): EngineMetrics | null {
  const found: EngineMetrics = {};
  for (const [re, key] of PRINTED_METRICS) {
    const m = re.exec(line);
    if (m) found[key] = Number(m[1]);
  }
  return Object.keys(found).length ? found : null;
}

/** `Execution output: [1, 2, 255]` (Rust Debug of the public-value bytes) as 0x hex, or null. */
export function parsePublicValues(line: string): string | null {
  const m = PRINTED.executionOutput.exec(line);
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
const TOOL_STDOUT = [PRINTED.executionOutput, ...PRINTED_METRICS.map(([re]) => re), PRINTED.defaultConfig];

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

/** Rust's exit status for a panic (unwrap, expect, assert!). */
export const PANIC_EXIT_STATUS = 101;

// The one panic that is the guest's doing: metered execution past twice the cost
// cap (v2.0.1:crates/vm/src/arch/execution_mode/metered_cost.rs:37-42).
const GUEST_PANICS = [/Execution cost \d+ exceeded maximum allowed cost/];

// eyre errors (exit status 1) that are the host's problem rather than the
// caller's: missing or unreadable keys and setup artifacts (their messages:
// v2.0.1:crates/cli/src/commands/prove.rs:369-374,383-387,396-401,411-416,
// crates/cli/src/commands/run.rs:249-254, crates/cli/src/commands/verify.rs:201-206,249-256,
// crates/cli/src/commands/setup.rs:139-143), the manifest (crates/cli/src/util.rs:49-77),
// and GPU, memory or disk trouble.
const HOST_FAILURES = [
  /\bCUDA\b|cuda(Error|Malloc)|CUDA_ERROR|\bGPU\b|no CUDA-capable device/i,
  /out of memory|memory allocation of \d+ bytes failed|Cannot allocate memory/i,
  /No space left on device/i,
  /Failed to read .*(proving|verifying) key from/,
  // Keys read without a hint (--app-pk, app.vk): v2.0.1:crates/sdk/src/fs.rs:146-153,210-216.
  /reading from \S+\.(pk|vk) failed/,
  /Failed to read EVM verifier from/,
  /Run 'cargo openvm (setup|keygen)/,
  /solc is not installed/,
  /could not find Cargo\.toml|manifest_path must be a path/i,
];

export type FailureClass = 'caller' | 'host' | 'command-line';

/**
 * Whose problem a failed run of the tool is: `command-line` for clap's exit
 * status 2 (the mapping does not fit the installed tool), `host` for signals,
 * panics (exit 101: missing KZG parameters, `cargo metadata`, keygen's asserts)
 * and host trouble named on stderr, `caller` otherwise (the guest failed or the
 * caller's input or proof was refused).
 */
export function classifyFailure(code: number | null, signal: string | null, stderrTail: string[]): FailureClass {
  const text = stderrTail.join('\n');
  if (signal || code === null) return 'host';
  if (code === 2) return 'command-line';
  if (code === PANIC_EXIT_STATUS) return GUEST_PANICS.some((re) => re.test(text)) ? 'caller' : 'host';
  return HOST_FAILURES.some((re) => re.test(text)) ? 'host' : 'caller';
}

// With --verbose the tool logs INFO through tracing-forest, which prints each
// root span's tree, one line per span or event starting with the level, when
// that span closes. Only such lines count: the guest runs again while proving
// and may print anything.
const TRACING_LINE = /^\s*(TRACE|DEBUG|INFO|WARN|ERROR)\s/;

/**
 * Phases and the segment count from the output of `prove <kind>`. The app
 * proof's span tree appears when the app proof is done; aggregation (and for
 * EVM the Halo2 wrapping) follows within the same command.
 */
export function proveOutputReader(kind: ProofType, announce: (phase: ProvePhase) => void) {
  let appDone = false;
  let segments = 0;
  const finishApp = () => {
    if (appDone) return;
    appDone = true;
    announce('AppProvingDone');
    if (kind !== 'app') announce('PostProcessing');
  };
  return {
    line(line: string) {
      if (!TRACING_LINE.test(line)) return;
      if (PRINTED.proveSegmentSpan.test(line)) segments++;
      if (PRINTED.appProveSpan.test(line) || PRINTED.aggregationSpan.test(line)) finishApp();
    },
    /** The command succeeded: whatever was not announced happened. */
    done() {
      finishApp();
    },
    /** Segments proved, when the tool's INFO output showed them. */
    get segments(): number | null {
      return segments || null;
    },
  };
}
