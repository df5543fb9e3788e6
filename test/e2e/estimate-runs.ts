// Estimates against real runs (docs/callers.md "Estimates"), shared by test/e2e/estimates.test.ts
// and `npm run bench:estimates`: on a local stack with real dev-engine agents, seeds the
// dev config's proving rates with two proofs of different sizes, then for three guests of
// different sizes runs a metered execution, reads its estimate (before proving), proves
// it, and reads what the proof actually took and cost.
import { caller, registerGuest, type Stack } from './stack.ts';

/** Input for loop.elf: `n` iterations, about 6n instructions. */
const loopInput = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return ['0x01' + b.toString('hex')];
};
const bytesInput = (text: string) => ['0x01' + Buffer.from(text).toString('hex')];

export interface EstimateRow {
  guest: string;
  cycles: number;
  /** The estimate the execution answered before proving. */
  estimate: { proving_seconds: number | null; cost: number | null; based_on_jobs: number; reason: string | null };
  /** The proof's charged attempt: launched_at → terminated_at, and its cost. */
  measured: { seconds: number; cost: number };
}

const seconds = (p: { launched_at: string; terminated_at: string }) => (Date.parse(p.terminated_at) - Date.parse(p.launched_at)) / 1000;

/** What the estimate says for `program` on `input`, before any proof of it, and the proof's real figures. */
export async function estimateVsMeasured(
  stack: Stack,
  seedSizes = [2_000_000, 30_000_000],
): Promise<{ before: EstimateRow['estimate']; rows: EstimateRow[] }> {
  const api = caller(stack);
  const hello = await registerGuest(api, stack.devConfig, 'hello.elf');
  const loop = await registerGuest(api, stack.devConfig, 'loop.elf');
  const execute = async (program: string, input: string[]) => {
    const { id } = await api.json('POST', `/v1/executions?program_id=${program}&mode=meter`, { input });
    await api.waitFor(`/v1/executions/${id}`, (e: any) => e.status === 'Succeeded' || e.status === 'Failed', 120_000);
    return api.json('GET', `/v1/executions/${id}?proof_type=stark`);
  };
  const prove = async (program: string, input: string[]) => {
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}&proof_type=stark`, { input });
    return api.waitFor(`/v1/proofs/${id}`, (p: any) => p.state === 'Succeeded' || p.state === 'Failed', 300_000);
  };
  const before = (await execute(hello, bytesInput('hello'))).estimate;
  for (const n of seedSizes) await prove(loop, loopInput(n));
  const rows: EstimateRow[] = [];
  for (const [guest, program, input] of [
    ['hello.elf', hello, bytesInput('hello world')],
    ['loop.elf (5M iterations)', loop, loopInput(5_000_000)],
    ['loop.elf (60M iterations)', loop, loopInput(60_000_000)],
  ] as const) {
    const run = await execute(program, [...input]);
    const proof = await prove(program, [...input]);
    rows.push({
      guest,
      cycles: run.num_instructions ?? run.total_cycle,
      estimate: run.estimate,
      measured: { seconds: seconds(proof), cost: proof.cost },
    });
  }
  return { before, rows };
}

/** The rows as a table: estimated vs measured time and cost. */
export function estimateTable(rows: EstimateRow[]): string {
  const usd = (micro: number | null) => (micro === null ? '—' : `$${(micro / 1e6).toFixed(6)}`);
  const lines = [
    '| guest | cycles | estimated time | measured time | estimated cost | measured cost | based on |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows)
    lines.push(
      `| ${r.guest} | ${r.cycles.toLocaleString('en')} | ${r.estimate.proving_seconds === null ? '—' : `${r.estimate.proving_seconds.toFixed(2)} s`} | ${r.measured.seconds.toFixed(2)} s | ${usd(r.estimate.cost)} | ${usd(r.measured.cost)} | ${r.estimate.based_on_jobs} proofs |`,
    );
  return lines.join('\n');
}
