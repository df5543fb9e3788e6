// The benches' command lines, one way: `--help`/`-h` prints the usage and exits 0; an
// unknown flag or a bad value exits 2 with what is wrong and the usage, never a stack
// trace. Every flag but --help takes a string value, read with number() or string().
import { parseArgs } from 'node:util';

export interface BenchCli {
  /** Exits 2 with the message and the usage. */
  fail(message: string): never;
  /** The flag as a number of at least `min` (an integer unless `integer` is false), or the fallback when absent. */
  number(flag: string, fallback: number, min: number, integer?: boolean): number;
  /** The flag's text, or undefined when absent. */
  string(flag: string): string | undefined;
}

export function benchCli(name: string, usage: string, flags: readonly string[]): BenchCli {
  const fail = (message: string): never => {
    console.error(`${name}: ${message}\n${usage}`);
    process.exit(2);
  };
  let values: Record<string, string | boolean | undefined> = {};
  try {
    ({ values } = parseArgs({
      options: { ...Object.fromEntries(flags.map((f) => [f, { type: 'string' as const }])), help: { type: 'boolean', short: 'h' } },
    }));
  } catch (err) {
    fail((err as Error).message);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const string = (flag: string) => values[flag] as string | undefined;
  return {
    fail,
    string,
    number(flag, fallback, min, integer = true) {
      const text = string(flag);
      if (text !== undefined && text.trim() === '') fail(`--${flag} needs a value`);
      const n = text === undefined ? fallback : Number(text);
      if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n)))
        fail(`--${flag} must be ${integer ? 'an integer' : 'a number'} of at least ${min} (got '${text}')`);
      return n;
    },
  };
}
