#!/usr/bin/env node
// Entry point of the `prover-agent` command. The sources are TypeScript run
// directly by Node's type stripping (Node >= 22.18), so there is no build step.
import '../src/cli.ts';
