// `prover-agent setup-config <cfg_id>`: prepares (or checks) the directory the
// openvm engine needs for one config on this host. Without --run or --check it
// prints the steps as shell commands; --run performs them and then checks;
// --check only checks. Exit status: 0 complete (or commands printed), 1
// incomplete or a step failed, 2 usage error.
import { spawn } from 'node:child_process';
import { copyFile, mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI_MAPPINGS, selectCliMapping, shellJoin, type CliMapping } from '../engine/openvm/commands.ts';
import {
  aggregationPaths,
  configPaths,
  defaultConfigsDir,
  missingRequirements,
  requirements,
  STUB_MAIN,
  STUB_MANIFEST,
} from '../engine/openvm/config-dir.ts';

const newest = CLI_MAPPINGS[0];

const usage = `usage: prover-agent setup-config <cfg_id> [flags]

Prepares <configs-dir>/<cfg_id>/ for the openvm engine: the config's openvm.toml,
a stub Cargo package, app keys (cargo openvm keygen) and, in ~/.openvm of the user
running the agent, aggregation keys (cargo openvm setup [--evm]).

  --configs-dir DIR      configs directory (default: $PROVER_AGENT_CONFIGS_DIR or ${defaultConfigsDir({})})
  --openvm-toml FILE     the config's openvm.toml (needed unless the directory has one)
  --openvm-version V     openvm version of the config (default: ${newest.major}.${newest.readMinor}, the newest this agent knows)
  --evm                  also the keys EVM proofs need (cargo openvm setup --evm: large)
  --cargo PATH           cargo executable (default: $PROVER_AGENT_CARGO or cargo)
  --run                  run the steps, then check
  --check                only check; exit 1 listing what is missing
  -h, --help             this text

Without --run or --check the steps are printed as shell commands.`;

interface Plan {
  mapping: CliMapping;
  cfg: ReturnType<typeof configPaths>;
  agg: ReturnType<typeof aggregationPaths>;
  openvmToml: string | null;
  evm: boolean;
  cargo: string;
}

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'configs-dir': { type: 'string' },
        'openvm-toml': { type: 'string' },
        'openvm-version': { type: 'string' },
        evm: { type: 'boolean', default: false },
        cargo: { type: 'string' },
        run: { type: 'boolean', default: false },
        check: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    console.error(`prover-agent setup-config: ${(err as Error).message}\n\n${usage}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(usage);
    return 0;
  }
  if (positionals.length !== 1 || (values.run && values.check)) {
    console.error(`prover-agent setup-config: give one config id, and at most one of --run and --check\n\n${usage}`);
    return 2;
  }
  const configId = positionals[0];
  let plan: Plan;
  try {
    const { mapping, warning } = selectCliMapping(values['openvm-version'] ?? `${newest.major}.${newest.readMinor}.0`);
    if (warning) console.error(`warning: ${warning}`);
    plan = {
      mapping,
      cfg: configPaths(resolve(values['configs-dir'] ?? defaultConfigsDir()), configId, mapping),
      agg: aggregationPaths(mapping),
      openvmToml: values['openvm-toml'] ? resolve(values['openvm-toml']) : null,
      evm: values.evm,
      cargo: values.cargo ?? process.env.PROVER_AGENT_CARGO ?? 'cargo',
    };
  } catch (err) {
    console.error(`prover-agent setup-config: ${(err as Error).message}`);
    return 2;
  }

  if (values.check) return check(plan);
  if (!values.run) {
    console.log(script(plan));
    return 0;
  }
  const ran = await run(plan);
  return ran === 0 ? check(plan) : ran;
}

/** The steps as a shell script an operator can read or paste. */
function script(p: Plan): string {
  const { cfg } = p;
  const toml = p.openvmToml ?? '<path/to/the/config/openvm.toml>';
  return [
    `# Config directory for the openvm engine (cargo-openvm ${p.mapping.label}); run as the agent's user.`,
    `mkdir -p ${shellJoin([dirname(cfg.stubMain)])}`,
    `cp ${shellJoin([toml, cfg.openvmToml])}`,
    `# cargo-openvm resolves a Cargo manifest even when given --exe: a stub package.`,
    `cat > ${shellJoin([cfg.manifestPath])} <<'EOF'\n${STUB_MANIFEST}EOF`,
    `printf 'fn main() {}\\n' > ${shellJoin([cfg.stubMain])}`,
    `# Aggregation keys in ~/.openvm (${p.agg.dir}); once per host and openvm version.`,
    shellJoin([p.cargo, ...p.mapping.setup({ evm: p.evm })]),
    `# App keys from openvm.toml, into ${dirname(cfg.appPk)}.`,
    shellJoin([p.cargo, ...p.mapping.keygen(cfg)]),
    `# Then check:`,
    shellJoin(['prover-agent', 'setup-config', cfg.dir.split('/').pop()!, '--configs-dir', dirname(cfg.dir), ...(p.evm ? ['--evm'] : []), '--check']),
  ].join('\n');
}

async function run(p: Plan): Promise<number> {
  const { cfg } = p;
  const hasToml = await exists(cfg.openvmToml);
  if (!p.openvmToml && !hasToml) {
    console.error(`prover-agent setup-config: ${cfg.openvmToml} does not exist; pass --openvm-toml FILE`);
    return 2;
  }
  await mkdir(dirname(cfg.stubMain), { recursive: true });
  if (p.openvmToml) await copyFile(p.openvmToml, cfg.openvmToml);
  await writeFile(cfg.manifestPath, STUB_MANIFEST);
  await writeFile(cfg.stubMain, STUB_MAIN);
  console.log(`wrote ${cfg.openvmToml}, ${cfg.manifestPath}, ${cfg.stubMain}`);

  // setup regenerates every key it writes, which takes long (hours with --evm): skip it when they are there.
  const aggregation = requirements(cfg, p.agg, { evm: p.evm }).filter((r) => r.path.startsWith(p.agg.dir + '/'));
  if ((await missingRequirements(aggregation)).length === 0) {
    console.log(`aggregation keys present in ${p.agg.dir}; skipping \`cargo openvm setup\``);
  } else {
    const code = await step(p.cargo, p.mapping.setup({ evm: p.evm }));
    if (code !== 0) return code;
  }
  return step(p.cargo, p.mapping.keygen(cfg));
}

/** Runs one tool step with the terminal attached; 1 when it fails. */
function step(cargo: string, args: string[]): Promise<number> {
  console.log(`$ ${shellJoin([cargo, ...args])}`);
  return new Promise((done) => {
    const child = spawn(cargo, args, { stdio: 'inherit' });
    child.on('error', (err) => {
      console.error(`prover-agent setup-config: cannot run ${cargo}: ${err.message}`);
      done(1);
    });
    child.on('exit', (code, signal) => {
      if (code === 0) return done(0);
      console.error(`prover-agent setup-config: step failed (${signal ?? `exit status ${code}`})`);
      done(1);
    });
  });
}

async function check(p: Plan): Promise<number> {
  const missing = await missingRequirements(requirements(p.cfg, p.agg, { evm: p.evm }));
  if (missing.length === 0) {
    console.log(`config directory ${p.cfg.dir} is complete${p.evm ? ' (with EVM keys)' : ''}`);
    return 0;
  }
  console.error(`config directory ${p.cfg.dir} is incomplete; missing:`);
  for (const r of missing) console.error(`  ${r.path}  (${r.what})`);
  console.error(`run \`prover-agent setup-config ${p.cfg.dir.split('/').pop()} --configs-dir ${dirname(p.cfg.dir)}${p.evm ? ' --evm' : ''}\` to see the steps`);
  return 1;
}

const exists = (path: string) => stat(path).then(() => true, () => false);
