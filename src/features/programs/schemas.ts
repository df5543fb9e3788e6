// The programs' schemas. The console's program record lives here (it came out of
// lib/console-records.ts, which was accounts' and the console's alike); free of Worker
// APIs, as the console's browser client takes its types from it (src/console/ui/api-types.ts).
import { z } from '@hono/zod-openapi';
import { ProgramRecord } from '../../lib/records.ts';

export const ProgramDetail = ProgramRecord.extend({
  artifacts: z.object({
    elf_size: z.number().int(),
    vmexe_size: z.number().int(),
    app_exe_commit: z.string().nullable(),
    app_vm_commit: z.string(),
    engine: z.string(),
  }),
  proof_states: z.record(z.string(), z.number().int()).openapi({ description: 'How many of its proofs are in each state' }),
}).openapi('ConsoleProgramDetail');
