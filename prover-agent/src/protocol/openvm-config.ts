// Which openvm configs the fleet can serve, shared by the service's operator tool
// (`admin create-config` and `set-config-toml` refuse what no agent can run or key) and
// the agent (`setup-config` refuses the same, and the openvm engine at claim time).
//
// Every fact is traced to openvm-org/openvm at tag v2.0.1, cited as
// `v2.0.1:<path>:<line>` as in prover-agent/src/engine/openvm/commands.ts, whose
// command-line mappings (one per release line below) the engine runs.
//
// Version policy: a release line serves one major from a first final release upwards
// (`2.0.0` for 2.x). Pre-releases are refused: 2.0.0-beta.2 has other flags (no
// --agg-prefix-pk/--agg-pk split, v2.0.0-beta.2:crates/cli/src/args.rs) and other
// JSON (baseline without num_user_pvs). A later minor of a known major uses the newest
// mapping of that major with a warning; an unknown major is refused.

/** A line of openvm releases that one command-line mapping serves. */
export interface OpenvmRelease {
  /** Label shown to operators, e.g. "2.x". */
  label: string;
  major: number;
  /** First minor version these flags apply to. */
  sinceMinor: number;
  /** Newest minor whose sources were read; later minors get a warning. */
  readMinor: number;
  /** What keygen accepts: it panics on anything else. */
  keygenLimits: { numPublicValues: number; addrSpaceHeight: number; pointerMaxBits: number };
}

/** The release lines the agent has mappings for, newest first. */
export const OPENVM_RELEASES: readonly OpenvmRelease[] = [
  {
    label: '2.x',
    major: 2,
    sinceMinor: 0,
    readMinor: 0,
    // v2.0.1:crates/cli/src/commands/keygen.rs:130-147 (assert_eq!/assert!: a panic, exit 101);
    // defaults v2.0.1:crates/vm/src/arch/config.rs:34,188-196, crates/vm/src/system/memory/mod.rs:30.
    keygenLimits: { numPublicValues: 32, addrSpaceHeight: 3, pointerMaxBits: 29 },
  },
];

export interface ParsedVersion {
  major: number;
  minor: number;
  patch: number;
  /** e.g. "beta.2"; null for a final release. */
  prerelease: string | null;
  text: string;
}

/** Parses `v2.0.0`, `2.0`, `2.0.0-beta.2`, or the first such number in a longer text. */
export function parseVersion(text: string): ParsedVersion | null {
  const m = /v?(\d+)\.(\d+)(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?/.exec(text);
  if (!m) return null;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0), prerelease: m[4] ?? null, text: m[0].replace(/^v/, '') };
}

/** Why no release line serves `openvmVersion`, or null when one does. */
export function versionProblem(openvmVersion: string): string | null {
  const v = parseVersion(openvmVersion);
  if (!v) return `cannot read openvm_version '${openvmVersion}'`;
  const known = OPENVM_RELEASES.map((m) => `${m.major}.${m.sinceMinor}.0 and later ${m.label} releases`).join('; ');
  if (v.prerelease !== null) {
    return `openvm ${v.text} is a pre-release; this agent maps final releases only (${known}): pre-releases have other flags and JSON`;
  }
  if (!OPENVM_RELEASES.some((m) => m.major === v.major && m.sinceMinor <= v.minor)) {
    return `no command-line mapping for openvm ${v.text} (this agent knows ${known})`;
  }
  return null;
}

/** The release line serving `openvmVersion` (the newest of its major), or null: see versionProblem(). */
export function releaseOf(openvmVersion: string): OpenvmRelease | null {
  if (versionProblem(openvmVersion)) return null;
  const v = parseVersion(openvmVersion)!;
  return OPENVM_RELEASES.filter((m) => m.major === v.major && m.sinceMinor <= v.minor).sort((a, b) => b.sinceMinor - a.sinceMinor)[0];
}

/** Integer settings of an openvm.toml's [app_vm_config.system.config] tables (a line scan, not a TOML parser). */
function systemSettings(toml: string): Record<string, number> {
  const found: Record<string, number> = {};
  let table = '';
  for (const raw of toml.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    const header = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (header) {
      table = header[1].replace(/\s+/g, '');
      continue;
    }
    const kv = /^([A-Za-z_]+)\s*=\s*(\d+)$/.exec(line);
    if (!kv) continue;
    if (table === 'app_vm_config.system.config') found[kv[1]] = Number(kv[2]);
    if (table === 'app_vm_config.system.config.memory_config') found[`memory_config.${kv[1]}`] = Number(kv[2]);
  }
  return found;
}

/**
 * Reasons `cargo openvm` cannot key or serve a config, each with its v2.0.1
 * source; empty when it can. `public_values_bytes` is the service's size of the
 * public-values space; `openvm_toml`, when known, is the config's VM.
 */
export function openvmConfigProblems(c: { openvm_version: string; public_values_bytes: number; openvm_toml?: string | null }): string[] {
  const problems: string[] = [];
  const version = versionProblem(c.openvm_version);
  if (version) return [version];
  const limits = releaseOf(c.openvm_version)!.keygenLimits;
  const keygen = 'v2.0.1:crates/cli/src/commands/keygen.rs:130-147';
  if (c.public_values_bytes !== limits.numPublicValues) {
    problems.push(
      `public_values_bytes ${c.public_values_bytes}: cargo openvm keygen only supports the default num_public_values (${limits.numPublicValues}) (${keygen})`,
    );
  }
  if (c.openvm_toml) {
    const s = systemSettings(c.openvm_toml);
    const npv = s.num_public_values;
    if (npv !== undefined && npv !== limits.numPublicValues) {
      problems.push(`openvm.toml sets num_public_values = ${npv}: cargo openvm keygen only supports ${limits.numPublicValues} (${keygen})`);
    }
    if (npv !== undefined && npv !== c.public_values_bytes) {
      problems.push(`openvm.toml sets num_public_values = ${npv} but the config says public_values_bytes ${c.public_values_bytes}`);
    }
    const height = s['memory_config.addr_space_height'];
    const bits = s['memory_config.pointer_max_bits'];
    if ((height !== undefined && height !== limits.addrSpaceHeight) || (bits !== undefined && bits !== limits.pointerMaxBits)) {
      problems.push(
        `openvm.toml changes the memory dimensions (addr_space_height ${height ?? limits.addrSpaceHeight}, pointer_max_bits ${bits ?? limits.pointerMaxBits}): ` +
          `cargo openvm keygen only supports the defaults (${limits.addrSpaceHeight}, ${limits.pointerMaxBits}) (${keygen})`,
      );
    }
  }
  return problems;
}
