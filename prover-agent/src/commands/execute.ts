// `prover-agent execute --elf <file> [--input <input.json>] [--max-cycles N] [--public-values-bytes N]`:
// runs a guest with the dev engine's executor and prints one JSON object
// {"exit_code", "num_instructions", "public_values", "stdout", "error"}; exits 0 when the
// guest exited 0, 1 otherwise, 2 for a usage error.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { toHex } from '../engine/dev/commit.ts';
import { ElfError, loadElf } from '../engine/dev/elf.ts';
import { DEFAULT_MAX_CYCLES, DEFAULT_PUBLIC_VALUES_BYTES, checkPublicValuesBytes, executeProgram } from '../engine/dev/executor.ts';
import { InputError, parseInputJson } from '../engine/dev/input.ts';

const usage = `usage: prover-agent execute --elf <file> [--input <input.json>] [--max-cycles N] [--public-values-bytes N]
  --elf                  the guest program (RV32IM ELF)
  --input                JSON file {"input": ["0x01..", "0x02.."]} (default: no input)
  --max-cycles           instruction limit (default ${DEFAULT_MAX_CYCLES})
  --public-values-bytes  size of the public-values space, 8 x a power of two (default ${DEFAULT_PUBLIC_VALUES_BYTES})
Prints {"exit_code", "num_instructions", "public_values", "stdout", "error"} as JSON.`;

function positiveInteger(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1) throw new RangeError(`${flag} must be a positive integer, got '${text}'`);
  return n;
}

export async function main(argv: string[]): Promise<number> {
  let elfPath: string;
  let inputPath: string | undefined;
  let maxCycles: number;
  let publicValuesBytes: number;
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        elf: { type: 'string' },
        input: { type: 'string' },
        'max-cycles': { type: 'string' },
        'public-values-bytes': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    });
    if (values.help) {
      console.log(usage);
      return 0;
    }
    if (!values.elf) throw new Error('--elf is required');
    elfPath = values.elf;
    inputPath = values.input;
    maxCycles = positiveInteger(values['max-cycles'], '--max-cycles', DEFAULT_MAX_CYCLES);
    publicValuesBytes = checkPublicValuesBytes(
      positiveInteger(values['public-values-bytes'], '--public-values-bytes', DEFAULT_PUBLIC_VALUES_BYTES),
    );
  } catch (err) {
    console.error(`prover-agent execute: ${(err as Error).message}\n${usage}`);
    return 2;
  }

  const report = (result: { exit_code: number; num_instructions: number; public_values: string; stdout: string; error: string | null }) => {
    console.log(JSON.stringify(result));
    return result.exit_code === 0 && result.error === null ? 0 : 1;
  };
  let elf: Uint8Array;
  let inputText: string | undefined;
  try {
    elf = readFileSync(elfPath);
    inputText = inputPath === undefined ? undefined : readFileSync(inputPath, 'utf8');
  } catch (err) {
    console.error(`prover-agent execute: ${(err as Error).message}`);
    return 2;
  }
  try {
    const input = inputText === undefined ? [] : parseInputJson(inputText);
    const out = await executeProgram(loadElf(elf), input, { maxCycles, publicValuesBytes });
    return report({
      exit_code: out.exitCode ?? -1,
      num_instructions: out.numInstructions,
      public_values: toHex(out.publicValues),
      stdout: out.stdout,
      error: out.error,
    });
  } catch (err) {
    if (!(err instanceof ElfError || err instanceof InputError)) throw err;
    return report({
      exit_code: -1,
      num_instructions: 0,
      public_values: toHex(new Uint8Array(publicValuesBytes)),
      stdout: '',
      error: err.message,
    });
  }
}
