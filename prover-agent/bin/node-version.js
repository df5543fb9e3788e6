// The Node a program needs, checked in plain JavaScript before any TypeScript loads: an
// older Node cannot even load the sources (Node 20: ERR_UNKNOWN_FILE_EXTENSION on the
// first .ts import), so without this check it dies with a stack trace instead of a word
// on what to install. The version required is the package's `engines.node` (">=X.Y.Z").
// Used by the agent's bin (prover-agent.js) and preloaded by the Worker's tools
// (src/tools/require-node.js). Written for any Node that can run an ES module.
import { readFileSync } from 'node:fs';

/** [major, minor, patch] of "v22.18.0", "22.18.0" or ">=22.18.0". */
export function versionParts(text) {
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(String(text));
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [0, 0, 0];
}

/** Whether `actual` is at least `required` (both "X.Y.Z"-like). */
export function satisfies(actual, required) {
  const a = versionParts(actual);
  const r = versionParts(required);
  for (let i = 0; i < 3; i++) if (a[i] !== r[i]) return a[i] > r[i];
  return true;
}

/**
 * Exits with one line on stderr, naming the package, when this Node is older than
 * `packageJsonUrl`'s engines.node asks; returns the package's manifest otherwise.
 */
export function requireNode(packageJsonUrl, hint) {
  const pkg = JSON.parse(readFileSync(packageJsonUrl, 'utf8'));
  const required = versionParts(pkg.engines && pkg.engines.node).join('.');
  if (!satisfies(process.versions.node, required)) {
    process.stderr.write(
      `${pkg.name}: needs Node ${required} or later; this is Node ${process.versions.node} (${process.execPath}): ${hint}\n`,
    );
    process.exit(1);
  }
  return pkg;
}
