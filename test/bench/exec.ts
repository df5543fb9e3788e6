// `npm run bench:exec`: instructions per second of the dev engine's executor on a
// compute-bound guest (test/guests/src/bench.c) of about 10^8 instructions.
// Usage: node test/bench/exec.ts [rounds] [repeats]   (defaults: 174 rounds, 3 repeats)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadElf } from '../../prover-agent/src/engine/dev/elf.ts';
import { executeProgram } from '../../prover-agent/src/engine/dev/executor.ts';
import { parseInputJson } from '../../prover-agent/src/engine/dev/input.ts';

const rounds = Number(process.argv[2] ?? 174); // about 1.0 x 10^8 instructions
const repeats = Number(process.argv[3] ?? 3);
const elfPath = fileURLToPath(new URL('../guests/build/bench.elf', import.meta.url));
const image = loadElf(readFileSync(elfPath));
const word = Buffer.alloc(4);
word.writeUInt32LE(rounds);
const input = parseInputJson(JSON.stringify({ input: [`0x01${word.toString('hex')}`] }));

console.log(`dev executor benchmark: bench.elf, ${rounds} rounds, ${repeats} runs (one core, Node ${process.version})`);
let best = 0;
for (let i = 0; i < repeats; i++) {
  const start = performance.now();
  const out = await executeProgram(image, input);
  const seconds = (performance.now() - start) / 1000;
  if (out.error) throw new Error(`bench guest failed: ${out.error}`);
  const rate = out.numInstructions / seconds;
  best = Math.max(best, rate);
  console.log(
    `run ${i + 1}: ${out.numInstructions.toLocaleString('en-US')} instructions in ${seconds.toFixed(3)} s = ${(rate / 1e6).toFixed(1)} M instructions/s`,
  );
}
console.log(`best: ${(best / 1e6).toFixed(1)} M instructions/s (target: 100)`);
