// The guest machine's state outside the registers: memory, the input and hint streams,
// the public-values space and printed output, and the semantics of the custom
// instructions (guest-abi.md). Generated region code calls the methods named after the
// instructions with the values of the instruction's rd, rs1 and rs2 registers.
import { hexWord } from './decode.ts';
import { MEM_SIZE, type ProgramImage } from './elf.ts';
import type { InputEntry } from './input.ts';
import { keccakF1600, sha256Compress, sha512Compress } from './precompiles.ts';

/** A fatal execution error at a known pc. */
export class Trap extends Error {
  override name = 'Trap';
  readonly pc: number;
  constructor(message: string, pc: number) {
    super(`${message} at pc ${hexWord(pc)}`);
    this.pc = pc;
  }
}

/** `hintbuffer` moves 1 to this many words (guest-abi.md). */
const MAX_HINT_BUFFER_WORDS = 1023;
/** `xorin` absorbs at most one keccak-256 rate block. */
const MAX_XORIN_BYTES = 136;
/** More random hint than this is a runaway guest, not a use case. */
const MAX_HINT_RANDOM_WORDS = 1 << 22;
/** Printed output kept; beyond it output is dropped with a note (a guest printing in a loop). */
export const MAX_STDOUT_CHARS = 1 << 20;
/** A print is decoded and handed on in pieces of at most this many bytes. */
const PRINT_PIECE_BYTES = 64 * 1024;

export interface MachineOptions {
  publicValuesBytes: number;
  /** Called with each string the guest prints. */
  onPrint?: (text: string) => void;
  randomBytes: (n: number) => Uint8Array;
}

export class Machine {
  readonly mem = new Uint8Array(MEM_SIZE);
  readonly m8s = new Int8Array(this.mem.buffer);
  readonly m16 = new Uint16Array(this.mem.buffer);
  readonly m16s = new Int16Array(this.mem.buffer);
  readonly m32 = new Int32Array(this.mem.buffer);
  /** x0..x31, and a slot for writes to x0 (see interpret.ts). */
  readonly regs = new Int32Array(33);
  readonly publicValues: Uint8Array;
  exitCode: number | null = null;

  private readonly input: InputEntry[];
  private inputPos = 0;
  /** Cells of the hint stream: bytes, or field elements for a 02 entry. */
  private hint: Uint8Array | Uint32Array = new Uint8Array(0);
  private hintPos = 0;
  private readonly printed: string[] = [];
  private printedChars = 0;
  private outputDropped = false;
  private readonly options: MachineOptions;
  private readonly utf8 = new TextDecoder('utf-8');

  constructor(image: ProgramImage, input: InputEntry[], options: MachineOptions) {
    for (const segment of image.segments) this.mem.set(segment.data, segment.vaddr);
    this.input = input;
    this.options = options;
    this.publicValues = new Uint8Array(options.publicValuesBytes);
  }

  get stdout(): string {
    return this.printed.join('');
  }

  // ---- faults raised by generated code ----

  memFault(pc: number, addr: number, size: number, store: boolean): Trap {
    const what = `${store ? 'store' : 'load'} of ${size} byte${size > 1 ? 's' : ''} at address ${hexWord(addr)}`;
    return (addr >>> 0) + size > MEM_SIZE
      ? new Trap(`out-of-bounds ${what} (guest memory is ${hexWord(MEM_SIZE)} bytes)`, pc)
      : new Trap(`misaligned ${what}`, pc);
  }

  jumpFault(pc: number, target: number): Trap {
    return new Trap(`jump to misaligned address ${hexWord(target)}`, pc);
  }

  unsupported(name: string, pc: number): Trap {
    return new Trap(`unsupported instruction ${name}`, pc);
  }

  // ---- custom instructions ----

  terminate(code: number): void {
    this.exitCode = code;
  }

  hintstorew(addr: number, _rs1: number, _rs2: number, pc: number): void {
    this.storeHint(addr >>> 0, 4, pc, 'hintstorew');
  }

  hintbuffer(addr: number, words: number, _rs2: number, pc: number): void {
    words >>>= 0;
    if (words < 1 || words > MAX_HINT_BUFFER_WORDS)
      throw new Trap(`hintbuffer of ${words} words (must be 1..${MAX_HINT_BUFFER_WORDS})`, pc);
    this.storeHint(addr >>> 0, 4 * words, pc, 'hintbuffer');
  }

  reveal(offset: number, value: number, pc: number): void {
    offset >>>= 0;
    if ((offset & 3) !== 0) throw new Trap(`reveal at misaligned public-values offset ${offset}`, pc);
    if (offset + 4 > this.publicValues.length) {
      throw new Trap(`reveal at public-values offset ${offset} past the end of the ${this.publicValues.length}-byte public values`, pc);
    }
    new DataView(this.publicValues.buffer).setInt32(offset, value, true);
  }

  hintinput(pc: number): void {
    const entry = this.input[this.inputPos];
    if (!entry) {
      throw new Trap(
        `input stream exhausted: the guest read input entry ${this.inputPos} but the input has ${this.input.length} entr${this.input.length === 1 ? 'y' : 'ies'}`,
        pc,
      );
    }
    this.inputPos++;
    // len as u32 LE (4 cells), the vector, zero padding to a multiple of 4 cells.
    const len = entry.data.length;
    const cells = entry.kind === 'bytes' ? new Uint8Array(4 + ((len + 3) & ~3)) : new Uint32Array(4 + ((len + 3) & ~3));
    cells.set([len & 0xff, (len >>> 8) & 0xff, (len >>> 16) & 0xff, len >>> 24]);
    cells.set(entry.data, 4);
    this.hint = cells;
    this.hintPos = 0;
  }

  printstr(addr: number, len: number, _rs2: number, pc: number): void {
    const start = this.checkRange(addr, len, pc, 'printstr');
    const end = start + (len >>> 0);
    // In pieces: one string of a whole print (up to all of memory) is more than anything keeps of it.
    for (let at = start; at < end; at += PRINT_PIECE_BYTES) {
      const piece = this.utf8.decode(this.mem.subarray(at, Math.min(end, at + PRINT_PIECE_BYTES)), { stream: true });
      if (piece) this.print(piece);
    }
    const rest = this.utf8.decode(); // an incomplete sequence at the end: U+FFFD, as a whole decode gives
    if (rest) this.print(rest);
  }

  hintrandom(words: number, _rs1: number, _rs2: number, pc: number): void {
    words >>>= 0;
    if (words > MAX_HINT_RANDOM_WORDS) throw new Trap(`hintrandom of ${words} words (at most ${MAX_HINT_RANDOM_WORDS})`, pc);
    this.hint = this.options.randomBytes(4 * words);
    this.hintPos = 0;
  }

  keccakf(addr: number, _rs1: number, _rs2: number, pc: number): void {
    const at = this.checkRange(addr, 200, pc, 'keccakf');
    const state = new Uint32Array(50);
    const bytes = new Uint8Array(state.buffer);
    bytes.set(this.mem.subarray(at, at + 200));
    keccakF1600(state);
    this.mem.set(bytes, at);
  }

  xorin(dst: number, src: number, len: number, pc: number): void {
    len >>>= 0;
    if (len % 4 !== 0 || len > MAX_XORIN_BYTES)
      throw new Trap(`xorin of ${len} bytes (must be a multiple of 4, at most ${MAX_XORIN_BYTES})`, pc);
    const d = this.checkRange(dst, len, pc, 'xorin destination');
    const s = this.checkRange(src, len, pc, 'xorin source');
    const source = this.mem.slice(s, s + len);
    for (let i = 0; i < len; i++) this.mem[d + i] ^= source[i];
  }

  sha256_update(dst: number, state: number, block: number, pc: number): void {
    this.compress(dst, state, block, 32, 64, sha256Compress, pc, 'sha256_update');
  }

  sha512_update(dst: number, state: number, block: number, pc: number): void {
    this.compress(dst, state, block, 64, 128, sha512Compress, pc, 'sha512_update');
  }

  // ---- helpers ----

  private compress(
    dst: number,
    stateAddr: number,
    blockAddr: number,
    stateBytes: number,
    blockBytes: number,
    fn: (state: Uint32Array, block: Uint8Array) => void,
    pc: number,
    name: string,
  ): void {
    const s = this.checkRange(stateAddr, stateBytes, pc, `${name} state`);
    const b = this.checkRange(blockAddr, blockBytes, pc, `${name} block`);
    const d = this.checkRange(dst, stateBytes, pc, `${name} output`);
    // The state is little-endian words in guest memory, which is what a Uint32Array over a copy sees.
    const state = new Uint32Array(stateBytes / 4);
    new Uint8Array(state.buffer).set(this.mem.subarray(s, s + stateBytes));
    fn(state, this.mem.slice(b, b + blockBytes));
    this.mem.set(new Uint8Array(state.buffer), d);
  }

  /** The start of [addr, addr+len) as an unsigned address, or a trap when it leaves guest memory. */
  private checkRange(addr: number, len: number, pc: number, what: string): number {
    const start = addr >>> 0;
    if (start + (len >>> 0) > MEM_SIZE) {
      throw new Trap(`${what}: ${len >>> 0} bytes at address ${hexWord(start)} extend outside guest memory`, pc);
    }
    return start;
  }

  private storeHint(addr: number, count: number, pc: number, name: string): void {
    const available = this.hint.length - this.hintPos;
    if (available < count) {
      throw new Trap(`input stream exhausted: ${name} needs ${count} hint bytes but ${available} remain`, pc);
    }
    this.checkRange(addr, count, pc, name);
    const cells = this.hint;
    // A field-element cell lands in one byte of memory, truncated as the zkVM's executor does.
    for (let i = 0; i < count; i++) this.mem[addr + i] = cells[this.hintPos + i] & 0xff;
    this.hintPos += count;
  }

  private print(text: string): void {
    this.options.onPrint?.(text);
    const room = MAX_STDOUT_CHARS - this.printedChars;
    if (text.length <= room) {
      this.printed.push(text);
      this.printedChars += text.length;
    } else if (!this.outputDropped) {
      this.printed.push(text.slice(0, room), `\n[further output dropped: more than ${MAX_STDOUT_CHARS} characters]\n`);
      this.printedChars = MAX_STDOUT_CHARS;
      this.outputDropped = true;
    }
  }
}
