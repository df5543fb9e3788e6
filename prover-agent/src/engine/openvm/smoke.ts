// Operator's smoke test of the openvm engine on a GPU host: drives the engine
// exactly as the agent does (commit, metered execution, STARK proof, STARK
// verification, and with --evm an EVM proof and its verification) for one
// config and one program, then prints a summary. Exit status 0 when every step
// passed. The tool proves on one GPU: --gpus names the device it is pinned to.
//
//   node prover-agent/src/engine/openvm/smoke.ts --config <cfg_id> --vmexe FILE --input FILE
//        [--openvm-version V] [--configs-dir DIR] [--cargo PATH] [--gpus 0] [--evm]
//        [--expect-public-values 0xPREFIX] [--keep]
// --expect-public-values: the public values must start with these bytes.
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { EngineContext } from '../types.ts';
import { CLI_MAPPINGS } from './commands.ts';
import { createOpenvmEngine } from './index.ts';

const usage = `usage: node prover-agent/src/engine/openvm/smoke.ts --config <cfg_id> --vmexe FILE --input FILE
       [--openvm-version V] [--configs-dir DIR] [--cargo PATH] [--gpus 0] [--evm]
       [--expect-public-values 0xPREFIX] [--keep]`;

export async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string' },
        vmexe: { type: 'string' },
        input: { type: 'string' },
        'openvm-version': { type: 'string' },
        'configs-dir': { type: 'string' },
        cargo: { type: 'string' },
        gpus: { type: 'string', default: '0' },
        evm: { type: 'boolean', default: false },
        'expect-public-values': { type: 'string' },
        keep: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  if (!values.config || !values.vmexe || !values.input) {
    console.error(usage);
    return 2;
  }
  const newest = CLI_MAPPINGS[0];
  const gpus = values.gpus === '' ? [] : values.gpus.split(',').map(Number);
  const engine = createOpenvmEngine({
    configsDir: values['configs-dir'] ? resolve(values['configs-dir']) : undefined,
    cargoPath: values.cargo,
  });
  const workDir = await mkdtemp(join(tmpdir(), 'openvm-smoke-'));
  const files = {
    elfPath: join(workDir, 'program.elf'),
    vmexePath: join(workDir, 'program.vmexe'),
    inputPath: join(workDir, 'input.json'),
  };
  await copyFile(values.vmexe, files.vmexePath);
  await copyFile(values.input, files.inputPath);
  await writeFile(files.elfPath, ''); // the engine works from the VMEXE

  const ctx: EngineContext = {
    workDir,
    config: {
      id: values.config,
      engine: 'openvm',
      openvm_version: values['openvm-version'] ?? `${newest.major}.${newest.readMinor}.0`,
      stark_backend_version: '',
      app_vm_commit: '',
      deferral_enabled: false,
      public_values_bytes: 32,
    },
    signal: AbortSignal.timeout(24 * 60 * 60 * 1000),
    gpus,
    log: (line) => console.error(`  | ${line}`),
    progress: (u) => console.error(`  > ${u.phase ?? ''}${u.metrics ? ` ${JSON.stringify(u.metrics)}` : ''}`),
  };

  const results: [string, boolean, string][] = [];
  const step = async <T>(name: string, run: () => Promise<T>, judge: (r: T) => [boolean, string]) => {
    console.error(`== ${name}`);
    try {
      const r = await run();
      results.push([name, ...judge(r)]);
      return r;
    } catch (err) {
      results.push([name, false, (err as Error).message.split('\n').join(' / ')]);
      return null;
    }
  };

  try {
    const commit = await step(
      'commit',
      () => engine.commit(ctx, files),
      (c) => [true, `app_exe_commit ${c.app_exe_commit}, app_vm_commit ${c.app_vm_commit}`],
    );
    // The service records the VM commit on the config; EVM verification binds proofs to it.
    if (commit) ctx.config.app_vm_commit = commit.app_vm_commit;
    const baselinePath = join(workDir, 'baseline.json');
    if (commit) await writeFile(baselinePath, JSON.stringify(commit.baseline));
    const want = values['expect-public-values']?.toLowerCase();
    const pvCheck = (pv: string): [boolean, string] => [
      !want || pv.toLowerCase().startsWith(want),
      `public values ${pv}${want ? ` (expected ${want}…)` : ''}`,
    ];

    await step(
      'execute (meter)',
      () => engine.execute(ctx, { ...files, mode: 'meter' }),
      (r) => {
        const [ok, text] = pvCheck(r.public_values);
        return [
          ok && r.error === null,
          `${text}; ${r.num_instructions} instructions, ${r.cells_used} cells${r.error ? `; error: ${r.error}` : ''}`,
        ];
      },
    );
    const starkPath = join(workDir, 'stark-proof.json');
    const stark = await step(
      'prove stark',
      () =>
        engine.prove(ctx, {
          ...files,
          proof_type: 'stark',
          childProofPaths: [],
          outputPath: starkPath,
          app_exe_commit: commit?.app_exe_commit ?? '',
          baselinePath,
        }),
      (r) => pvCheck(r.public_values),
    );
    if (commit && stark) {
      await step(
        'verify stark',
        () => engine.verify(ctx, { proof_type: 'stark', proofPath: starkPath, baselinePath, app_exe_commit: commit.app_exe_commit }),
        (r) => [r.verified, r.reason ?? 'verified'],
      );
    }
    if (values.evm) {
      const evmPath = join(workDir, 'evm-proof.json');
      const evm = await step(
        'prove evm',
        () =>
          engine.prove(ctx, {
            ...files,
            proof_type: 'evm',
            childProofPaths: [],
            outputPath: evmPath,
            app_exe_commit: commit?.app_exe_commit ?? '',
            baselinePath,
          }),
        (r) => pvCheck(r.public_values),
      );
      if (commit && evm) {
        await step(
          'verify evm',
          () => engine.verify(ctx, { proof_type: 'evm', proofPath: evmPath, baselinePath, app_exe_commit: commit.app_exe_commit }),
          (r) => [r.verified, r.reason ?? 'verified'],
        );
      }
    }
  } finally {
    if (!values.keep) await rm(workDir, { recursive: true, force: true });
  }

  console.log(`openvm smoke test, config ${values.config}, GPUs [${gpus.join(',')}]${values.keep ? `, files in ${workDir}` : ''}`);
  for (const [name, ok, detail] of results) console.log(`${ok ? 'PASS' : 'FAIL'}  ${name}: ${detail}`);
  return results.every(([, ok]) => ok) ? 0 : 1;
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2));
}
