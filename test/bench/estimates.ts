// npm run bench:estimates
//
// On the local stack (wrangler dev + a real prover-agent, the dev engine): the proving
// estimate a metered execution answers (docs/callers.md "Estimates") next to the proof that then
// ran, for three guests of different sizes (test/e2e/estimate-runs.ts). Numbers only.
import { estimateTable, estimateVsMeasured } from '../e2e/estimate-runs.ts';
import { startStack } from '../e2e/stack.ts';

const stack = await startStack({ vars: { RENOTIFY_AFTER_SECONDS: '0' } });
try {
  await stack.startAgent({ name: 'bench-estimates' });
  const { before, rows } = await estimateVsMeasured(stack);
  console.log(`before any proof of the config: ${before.reason}`);
  console.log(estimateTable(rows));
} finally {
  await stack.stop();
}
