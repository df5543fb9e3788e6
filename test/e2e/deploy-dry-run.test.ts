// The production dry run, for real and offline: `npm run deploy:check -- --env production
// --offline` builds and bundles the Worker with wrangler (`wrangler deploy --dry-run --env
// production`) and checks the configuration. Wrangler must warn of nothing (a local setting
// left in the top-level vars once made it ask for DEV_PROOF_SECRET, WEBHOOKS_ALLOW_LOOPBACK,
// MAIL_SENDER… under env.production.vars), and the preflight must find nothing but what
// only an operator can give: the public origin. In the e2e project because the dry run
// rebuilds build/assets, as every stack's wrangler dev does: one at a time.
import { describe, expect, it } from 'vitest';
import { runDeployment } from '../../src/tools/deploy/deployment.ts';
import { readEnvironment } from '../../src/tools/deploy/environment.ts';
import { liveRunner, type Runner } from '../../src/tools/deploy/runner.ts';
import type { WranglerRun } from '../../src/tools/wrangler.ts';

describe('the production dry run', () => {
  it('warns of nothing, and the preflight asks only for the public origin', { timeout: 180_000 }, async () => {
    const live = liveRunner(() => {});
    const runs: { args: string[]; run: WranglerRun }[] = [];
    const recording: Runner = {
      say: live.say,
      async run(call) {
        const run = await live.run(call);
        runs.push({ args: call.args, run });
        return run;
      },
    };
    const lines: string[] = [];
    const outcome = await runDeployment({
      environment: await readEnvironment('production'),
      runner: recording,
      mode: 'check',
      offline: true,
      operatorEnv: {},
      out: (t) => lines.push(t),
    });
    expect(runs.map((r) => r.args)).toEqual([['deploy', '--dry-run', '--env', 'production']]);
    const [{ run }] = runs;
    const output = run.stdout + run.stderr;
    expect(run.code, output).toBe(0);
    expect(output).toMatch(/--dry-run: exiting now/);
    expect(output).not.toMatch(/warn/i);
    expect(outcome.problems.map((p) => p.what)).toEqual([
      'PUBLIC_ORIGIN is not set: mailed links (invitations, password resets) would have no origin',
    ]);
  });
});
