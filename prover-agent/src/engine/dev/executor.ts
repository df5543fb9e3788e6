// Runs a guest program to its end: the dispatch loop over the two tiers (interpreted
// blocks, compiled regions), the cycle limit, cancellation, and the outcome (exit code,
// count, public values, output, error).
import { randomBytes } from 'node:crypto';
import { compileRegion, HALT, type CodeView, type RegionFn, type RegionRuntime, type RunState } from './compile.ts';
import { hexWord } from './decode.ts';
import type { ProgramImage } from './elf.ts';
import type { InputEntry } from './input.ts';
import { createInterpreter } from './interpret.ts';
import { Machine, Trap } from './machine.ts';

export const DEFAULT_MAX_CYCLES = 10_000_000_000;
export const DEFAULT_PUBLIC_VALUES_BYTES = 32;
/** Instructions between checks of the abort signal (a few tenths of a second). */
const SLICE_INSTRUCTIONS = 1 << 25;
/** Public values beyond this are no realistic config. */
const MAX_PUBLIC_VALUES_BYTES = 1 << 20;
/** A block entered this many times by the interpreter gets compiled (see interpret.ts). */
export const DEFAULT_COMPILE_THRESHOLD = 32;

export interface ExecutionOptions {
  maxCycles?: number;
  /** Size of the public-values space: 8 x a power of two. */
  publicValuesBytes?: number;
  /** Checked between slices of execution; an abort rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Receives each string the guest prints, as it prints it. */
  onPrint?: (text: string) => void;
  /** Source of `hintrandom` bytes (default: crypto.randomBytes). */
  randomBytes?: (n: number) => Uint8Array;
  /**
   * Interpreted entries of a block before it is compiled: 0 compiles everything on first
   * entry, Infinity never compiles. Tests run both extremes; the default suits real use.
   */
  compileThreshold?: number;
}

export interface ExecutionOutcome {
  /** The guest's exit code; null when it did not terminate (trap, cycle limit). */
  exitCode: number | null;
  numInstructions: number;
  publicValues: Uint8Array;
  stdout: string;
  /** Null when the guest exited 0; otherwise why it failed, with its panic text when it printed any. */
  error: string | null;
}

export function checkPublicValuesBytes(n: number): number {
  if (!Number.isInteger(n) || n < 8 || n > MAX_PUBLIC_VALUES_BYTES || (n & (n - 1)) !== 0) {
    throw new RangeError(`public values size ${n} is not 8 x a power of two`);
  }
  return n;
}

function codeView(image: ProgramImage): CodeView {
  const code = image.segments.filter((s) => s.executable);
  const start = code[0].vaddr & ~3;
  const end = code.reduce((max, s) => Math.max(max, s.vaddr + s.memsz), 0);
  const words = new Int32Array(Math.ceil((end - start) / 4));
  const bytes = new Uint8Array(words.buffer);
  const isCode = new Uint8Array(words.length);
  for (const s of code) {
    bytes.set(s.data, s.vaddr - start);
    isCode.fill(1, Math.ceil((s.vaddr - start) / 4), Math.floor((s.vaddr + s.memsz - start) / 4));
  }
  return { start, words, isCode };
}

/** Guest output worth quoting in an error: the end of what it printed (a panic message comes last). */
function printedTail(stdout: string): string {
  const text = stdout.trim();
  return text.length > 2000 ? `...${text.slice(-2000)}` : text;
}

export async function executeProgram(image: ProgramImage, input: InputEntry[], options: ExecutionOptions = {}): Promise<ExecutionOutcome> {
  const maxCycles = options.maxCycles ?? DEFAULT_MAX_CYCLES;
  if (!Number.isSafeInteger(maxCycles) || maxCycles < 1) throw new RangeError(`max cycles ${maxCycles} is not a positive integer`);
  const machine = new Machine(image, input, {
    publicValuesBytes: checkPublicValuesBytes(options.publicValuesBytes ?? DEFAULT_PUBLIC_VALUES_BYTES),
    onPrint: options.onPrint,
    randomBytes: options.randomBytes ?? ((n) => randomBytes(n)),
  });
  const code = codeView(image);
  const runtime: RegionRuntime = {
    m8: machine.mem,
    m8s: machine.m8s,
    m16: machine.m16,
    m16s: machine.m16s,
    m32: machine.m32,
    host: machine,
    memFault: (pc, addr, size, store) => machine.memFault(pc, addr, size, store),
    jumpFault: (pc, target) => machine.jumpFault(pc, target),
  };
  const st: RunState = { n: 0, lim: 0 };
  const regs = machine.regs;
  const codeBytes = code.words.length * 4;
  const interpretBlock = createInterpreter(code, machine, regs, st);
  // Compiled regions by the word index of their entry pc, and interpreted entries per block.
  const regions: (RegionFn | undefined)[] = new Array(code.words.length);
  const entries = new Uint32Array(code.words.length);
  const threshold = options.compileThreshold ?? DEFAULT_COMPILE_THRESHOLD;
  const hasRun =
    threshold === 0 ? () => true : (pc: number) => entries[(pc - code.start) >>> 2] > 0 || regions[(pc - code.start) >>> 2] !== undefined;

  /** Runs until the guest halts (returns HALT) or no instruction fits under st.lim (returns the pc). */
  const run = (pc: number): number => {
    for (;;) {
      const off = pc - code.start;
      if (!(off >= 0 && off < codeBytes) || code.isCode[off >>> 2] === 0) {
        throw new Trap(`execution left the program's code`, pc);
      }
      const idx = off >>> 2;
      const before = st.n;
      let next: number;
      const region = regions[idx];
      if (region !== undefined) {
        next = region(regs, st);
        // The region's first block does not fit under the limit: the interpreter goes exactly up to it.
        if (next !== HALT && st.n === before) next = interpretBlock(pc);
      } else if (entries[idx]++ >= threshold) {
        regions[idx] = compileRegion(code, pc, runtime, hasRun);
        continue;
      } else {
        next = interpretBlock(pc);
      }
      if (next === HALT) return HALT;
      if (st.n === before) return pc;
      pc = next;
    }
  };

  const outcome = (error: string | null): ExecutionOutcome => ({
    exitCode: machine.exitCode,
    numInstructions: st.n,
    publicValues: machine.publicValues,
    stdout: machine.stdout,
    error,
  });

  let pc = image.entry;
  try {
    for (;;) {
      options.signal?.throwIfAborted();
      st.lim = Math.min(maxCycles, st.n + SLICE_INSTRUCTIONS);
      pc = run(pc);
      if (pc === HALT) break;
      if (st.n >= maxCycles) {
        return outcome(`cycle limit of ${maxCycles} instructions reached at pc ${hexWord(pc)} before the guest terminated`);
      }
      // Let the event loop deliver a cancellation before the next slice.
      await new Promise((resolve) => setImmediate(resolve));
    }
  } catch (err) {
    if (err instanceof Trap) return outcome(err.message);
    throw err;
  }
  const exitCode = machine.exitCode ?? 0;
  if (exitCode === 0) return outcome(null);
  const tail = printedTail(machine.stdout);
  return outcome(`guest exited with code ${exitCode}${tail ? `: ${tail}` : ''}`);
}
