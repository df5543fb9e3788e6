// `prover-agent setup-config <cfg_id>`: prepares (or checks) the directory the
// openvm engine needs for one config on this host, and publishes its keys.
//
// Where the config comes from: with the service's URL and an agent token (the
// flags and environment of `prover-agent run`) or a publisher token, its record,
// openvm.toml and published key digests included, is fetched from
// GET /internal/v1/configs/{id}; --openvm-toml
// overrides the toml (offline, or to test another one). Without the service,
// --openvm-toml and --openvm-version say it all.
//
// Without --run or --check it prints the steps as shell commands; --run
// performs them and then checks; --check only checks; --publish (after --run,
// or alone on a prepared host) uploads the key files to the service with the
// operator's publisher token (--publisher-token; an agent token cannot publish),
// each with its SHA-256, which the service checks. A key published already with the
// same digest is left alone; one published with another digest is replaced only
// with --supersede (a new version; links issued before it keep the old one). Exit
// status: 0 complete (or commands printed), 1 incomplete or a step failed, 2
// usage error or a config the tool cannot serve.
import { spawn } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ServiceClient } from '../agent/service-client.ts';
import { sha256File } from '../lib/file-digest.ts';
import { CLI_MAPPINGS, selectCliMapping, shellJoin, type CliMapping } from '../engine/openvm/commands.ts';
import {
  aggregationPaths,
  configPaths,
  defaultConfigsDir,
  missingRequirements,
  publishedKeyFiles,
  requirements,
  STUB_MAIN,
  STUB_MANIFEST,
  type Needs,
} from '../engine/openvm/config-dir.ts';
import { openvmConfigProblems, PUBLISHED_KEY_NAMES, versionProblem, type FleetConfig, type PublishedKeys } from '../protocol.ts';

const newest = CLI_MAPPINGS[0];

const usage = `usage: prover-agent setup-config <cfg_id> [flags]

Prepares <configs-dir>/<cfg_id>/ for the openvm engine: the config's openvm.toml,
a stub Cargo package, app keys (cargo openvm keygen) and, in ~/.openvm of the user
running the agent, aggregation keys (cargo openvm setup [--evm]).

  --api-url URL          the service; with --agent-token the config (and its openvm.toml)
                         comes from it (env PROVER_API_URL)
  --agent-token TOKEN    agent token (env PROVER_AGENT_TOKEN)
  --publisher-token TOKEN  the operator's publisher token, which --publish needs (env
                         PROVER_PUBLISHER_TOKEN; npm run admin -- create-publisher-token)
  --configs-dir DIR      configs directory (default: $PROVER_AGENT_CONFIGS_DIR or ${defaultConfigsDir({})})
  --openvm-toml FILE     the config's openvm.toml (overrides the service's; needed offline
                         unless the directory has one)
  --openvm-version V     openvm version of the config offline (default: ${newest.major}.${newest.readMinor}.0)
  --evm                  also what EVM proofs need (cargo openvm setup --evm: root and Halo2
                         keys, KZG parameters fetched over the network, the EVM verifier)
  --download             with --evm: download the prebuilt Halo2 key and verifier instead of
                         generating them (generating the verifier needs solc 0.8.19)
  --cargo PATH           cargo executable (default: $PROVER_AGENT_CARGO or cargo)
  --run                  run the steps, then check
  --check                only check; exit 1 listing what is missing
  --publish              upload the key files to the service (${PUBLISHED_KEY_NAMES.join(', ')}),
                         each with its SHA-256; keys published already with the same digest are skipped
  --supersede            with --publish: replace a published key that differs (a new version)
  -h, --help             this text

Without --run, --check or --publish the steps are printed as shell commands.`;

interface Plan {
  configId: string;
  mapping: CliMapping;
  cfg: ReturnType<typeof configPaths>;
  agg: ReturnType<typeof aggregationPaths>;
  /** The toml to install: a file given, or the service's text. */
  toml: { file: string } | { text: string } | null;
  evm: boolean;
  download: boolean;
  cargo: string;
  /** What the service publishes now (null: not asked). */
  published: PublishedKeys | null;
}

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'api-url': { type: 'string' },
        'agent-token': { type: 'string' },
        'publisher-token': { type: 'string' },
        supersede: { type: 'boolean', default: false },
        'configs-dir': { type: 'string' },
        'openvm-toml': { type: 'string' },
        'openvm-version': { type: 'string' },
        evm: { type: 'boolean', default: false },
        download: { type: 'boolean', default: false },
        cargo: { type: 'string' },
        run: { type: 'boolean', default: false },
        check: { type: 'boolean', default: false },
        publish: { type: 'boolean', default: false },
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
  const apiUrl = values['api-url'] ?? process.env.PROVER_API_URL ?? '';
  const agentToken = values['agent-token'] ?? process.env.PROVER_AGENT_TOKEN ?? '';
  const publisherToken = values['publisher-token'] ?? process.env.PROVER_PUBLISHER_TOKEN ?? '';
  // Reading the config takes either token (the service accepts a publisher token scoped to it).
  const readToken = agentToken || publisherToken;
  const service = apiUrl && readToken ? new ServiceClient(apiUrl, readToken, { attempts: 3 }) : null;
  if (values.publish && !(apiUrl && publisherToken)) {
    console.error(
      'prover-agent setup-config: --publish needs the service and the operator’s publisher token: --api-url and --publisher-token (or PROVER_API_URL, PROVER_PUBLISHER_TOKEN); an agent token cannot publish',
    );
    return 2;
  }
  if (values.supersede && !values.publish) {
    console.error('prover-agent setup-config: --supersede goes with --publish');
    return 2;
  }

  let plan: Plan;
  try {
    let record: FleetConfig | null = null;
    if (service) {
      record = await service.fleetConfig(configId);
      if (record.engine !== 'openvm') throw new Error(`config ${configId} is for the ${record.engine} engine, not openvm`);
    }
    const version = record?.openvm_version ?? values['openvm-version'] ?? `${newest.major}.${newest.readMinor}.0`;
    if (record && values['openvm-version'] && values['openvm-version'] !== record.openvm_version) {
      throw new Error(
        `--openvm-version ${values['openvm-version']} contradicts the service's openvm_version ${record.openvm_version} for ${configId}`,
      );
    }
    const unmappable = versionProblem(version);
    if (unmappable) throw new Error(unmappable);
    const { mapping, warning } = selectCliMapping(version);
    if (warning) console.error(`warning: ${warning}`);
    const tomlFile = values['openvm-toml'] ? resolve(values['openvm-toml']) : null;
    const tomlText = tomlFile ? await readFile(tomlFile, 'utf8') : (record?.openvm_toml ?? null);
    // keygen panics on what it cannot key; say why before any hour of setup.
    const problems = openvmConfigProblems({
      openvm_version: version,
      public_values_bytes: record?.public_values_bytes ?? mapping.keygenLimits.numPublicValues,
      openvm_toml: tomlText,
    });
    if (problems.length) throw new Error(`cargo openvm cannot key config ${configId}:\n  ${problems.join('\n  ')}`);
    plan = {
      configId,
      mapping,
      cfg: configPaths(resolve(values['configs-dir'] ?? defaultConfigsDir()), configId, mapping),
      agg: aggregationPaths(mapping),
      toml: tomlFile ? { file: tomlFile } : tomlText !== null ? { text: tomlText } : null,
      evm: values.evm,
      download: values.download,
      cargo: values.cargo ?? process.env.PROVER_AGENT_CARGO ?? 'cargo',
      published: record ? (record.keys ?? {}) : null,
    };
  } catch (err) {
    console.error(`prover-agent setup-config: ${(err as Error).message}`);
    return 2;
  }

  if (values.check) return check(plan);
  if (!values.run && !values.publish) {
    console.log(script(plan));
    return 0;
  }
  if (values.run) {
    const ran = await run(plan);
    if (ran !== 0) return ran;
  }
  const checked = await check(plan);
  if (checked !== 0 || !values.publish) return checked;
  return publish(plan, service!, publisherToken, values.supersede);
}

const needsOf = (p: Plan): Needs => ({ evmProve: p.evm, evmVerify: p.evm });

/** The steps as a shell script an operator can read or paste. */
function script(p: Plan): string {
  const { cfg } = p;
  const toml =
    p.toml === null
      ? `cp <path/to/the/config/openvm.toml> ${shellJoin([cfg.openvmToml])}`
      : 'file' in p.toml
        ? `cp ${shellJoin([p.toml.file, cfg.openvmToml])}`
        : `cat > ${shellJoin([cfg.openvmToml])} <<'EOF'\n${p.toml.text.endsWith('\n') ? p.toml.text : p.toml.text + '\n'}EOF`;
  return [
    `# Config directory for the openvm engine (cargo-openvm ${p.mapping.label}); run as the agent's user.`,
    `mkdir -p ${shellJoin([dirname(cfg.stubMain)])}`,
    toml,
    `# cargo-openvm resolves a Cargo manifest even when given --exe: a stub package.`,
    `cat > ${shellJoin([cfg.manifestPath])} <<'EOF'\n${STUB_MANIFEST}EOF`,
    `printf 'fn main() {}\\n' > ${shellJoin([cfg.stubMain])}`,
    `# Aggregation keys in ~/.openvm (${p.agg.dir}); once per host and openvm version.`,
    ...(p.evm
      ? [
          `# --evm also fetches KZG parameters over the network into ${p.agg.paramsDir}` +
            (p.download
              ? ' and downloads the Halo2 key and EVM verifier.'
              : ', generates the Halo2 key and (with solc 0.8.19) the EVM verifier.'),
        ]
      : []),
    shellJoin([p.cargo, ...p.mapping.setup({ evm: p.evm, download: p.download })]),
    `# App keys from openvm.toml, into ${dirname(cfg.appPk)}.`,
    shellJoin([p.cargo, ...p.mapping.keygen(cfg)]),
    `# Then check:`,
    shellJoin(['prover-agent', 'setup-config', p.configId, '--configs-dir', dirname(cfg.dir), ...(p.evm ? ['--evm'] : []), '--check']),
  ].join('\n');
}

async function run(p: Plan): Promise<number> {
  const { cfg } = p;
  if (!p.toml && !(await exists(cfg.openvmToml))) {
    console.error(
      `prover-agent setup-config: ${cfg.openvmToml} does not exist; pass --openvm-toml FILE or the service's --api-url and --agent-token`,
    );
    return 2;
  }
  await mkdir(dirname(cfg.stubMain), { recursive: true });
  if (p.toml) await writeFile(cfg.openvmToml, 'file' in p.toml ? await readFile(p.toml.file) : p.toml.text);
  await writeFile(cfg.manifestPath, STUB_MANIFEST);
  await writeFile(cfg.stubMain, STUB_MAIN);
  console.log(`wrote ${cfg.openvmToml}, ${cfg.manifestPath}, ${cfg.stubMain}`);

  // setup rewrites the internal-recursive (and root) keys every time, which takes
  // long: skip it when everything it writes is there.
  const written = requirements(cfg, p.agg, p.mapping, needsOf(p)).filter((r) => r.path.startsWith(p.agg.dir + '/'));
  if ((await missingRequirements(written)).length === 0) {
    console.log(`aggregation keys present in ${p.agg.dir}; skipping \`cargo openvm setup\``);
  } else {
    const code = await step(p.cargo, p.mapping.setup({ evm: p.evm, download: p.download }));
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
  const missing = await missingRequirements(requirements(p.cfg, p.agg, p.mapping, needsOf(p)));
  if (missing.length === 0) {
    console.log(`config directory ${p.cfg.dir} is complete${p.evm ? ' (with EVM keys)' : ''}`);
    return 0;
  }
  console.error(`config directory ${p.cfg.dir} is incomplete; missing:`);
  for (const r of missing) console.error(`  ${r.path}  (${r.what})`);
  console.error(
    `run \`prover-agent setup-config ${p.configId} --configs-dir ${dirname(p.cfg.dir)}${p.evm ? ' --evm' : ''}\` to see the steps`,
  );
  return 1;
}

/**
 * Uploads each key file (the EVM ones with --evm) to the service, streaming, with its
 * SHA-256 and the publisher token. A key the service publishes already with the same
 * digest is skipped (a re-run publishes nothing twice); one with another digest is
 * refused here unless --supersede, which names the version it replaces.
 */
async function publish(p: Plan, service: ServiceClient, publisherToken: string, supersede: boolean): Promise<number> {
  const files = publishedKeyFiles(p.cfg, p.agg);
  const published: PublishedKeys = p.published ?? (await service.fleetConfig(p.configId)).keys ?? {};
  for (const name of PUBLISHED_KEY_NAMES) {
    const { path, evm } = files[name];
    if (evm && !p.evm) continue;
    try {
      const sha256 = await sha256File(path);
      const current = published[name];
      if (current?.sha256 === sha256) {
        console.log(`${name} is published already with this digest (version ${current.version}, sha256 ${sha256}); skipped`);
        continue;
      }
      if (current && !supersede) {
        console.error(
          `prover-agent setup-config: ${name} of ${p.configId} is published (version ${current.version}, sha256 ${current.sha256}) and ${path} differs (sha256 ${sha256}); ` +
            'pass --supersede to publish it as a new version',
        );
        return 1;
      }
      const res = await service.publishKey(p.configId, name, path, {
        publisherToken,
        sha256,
        ...(current ? { supersedes: current.version } : {}),
      });
      console.log(`published ${name} version ${res.version} (${res.size} bytes, sha256 ${res.sha256}) from ${path}`);
    } catch (err) {
      console.error(`prover-agent setup-config: publishing ${name} from ${path} failed: ${(err as Error).message}`);
      return 1;
    }
  }
  return 0;
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );
