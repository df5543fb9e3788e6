// Estimates end to end (docs/callers.md "Estimates"): a Worker under wrangler dev and a real
// prover-agent with the dev engine. Before any proof of the config, a metered execution
// says "no estimate"; after two proofs of different sizes, three guests of different
// sizes get an estimate resting on the fleet's measurements, and their proofs then run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateTable, estimateVsMeasured } from './estimate-runs.ts';
import { startStack, type Stack } from './stack.ts';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ vars: { RENOTIFY_AFTER_SECONDS: '0' } });
  await stack.startAgent({ name: 'e2e-estimates' });
});
afterAll(async () => stack?.stop());

describe('estimates before proving, with real agents', () => {
  it('no estimate before the fleet measured a proof; then one for each of three guests of different sizes, resting on what it measured', async () => {
    const { before, rows } = await estimateVsMeasured(stack);
    expect(before).toMatchObject({ proving_seconds: null, cost: null, based_on_jobs: 0, reason: expect.stringMatching(/^No estimate/) });
    expect(rows).toHaveLength(3);
    const cycles = rows.map((r) => r.cycles);
    expect(cycles[0]).toBeLessThan(cycles[1]);
    expect(cycles[1]).toBeLessThan(cycles[2]);
    for (const [i, r] of rows.entries()) {
      // Each estimate rests on every proof of the config measured before it (2 seeds + the rows before).
      expect(r.estimate).toMatchObject({ based_on_jobs: 2 + i, proving_seconds: expect.any(Number), cost: expect.any(Number) });
      expect(r.measured.seconds).toBeGreaterThan(0);
    }
    console.log(estimateTable(rows));
  }, 600_000);
});
