// The registry of job kinds on the agent: one handler module per kind (the service's
// side: src/jobs/kinds/). Adding a kind: its protocol variant, its module here and on
// the service, and a line in each registry.
import type { JobKind } from '../../protocol.ts';
import { commitJob } from './commit.ts';
import type { JobKindHandler } from './contract.ts';
import { executeJob } from './execute.ts';
import { proofJob } from './proof.ts';
import { verifyJob } from './verify.ts';

const HANDLERS = { commit: commitJob, proof: proofJob, verify: verifyJob, execute: executeJob } as const satisfies {
  [K in JobKind]: JobKindHandler<K, any>;
};

/** The handler of `kind`, for the runner, which works on any kind. */
// Each handler's report() takes its own kind's operation and the runner hands back the very
// operation that handler made, which no type says; the kind table above is what checks it.
// eslint-disable-next-line no-restricted-syntax
export const handlerOf = (kind: JobKind) => HANDLERS[kind] as unknown as JobKindHandler;
