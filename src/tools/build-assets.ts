// Builds the Worker's static assets (wrangler.toml [assets], directory build/assets,
// ignored by git): the console's client, bundled from TypeScript (src/console/client,
// with the views it shares with the server, src/console/ui) by esbuild; its styles
// (src/console/static); and the libraries the pages load, copied from node_modules so
// that nothing comes from a CDN: uPlot (the usage chart) and Scalar's API reference
// bundle (/docs). Run by wrangler before `wrangler dev`/`deploy` ([build] command) and
// by `npm test`.
import { build } from 'esbuild';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OUT = path.join(ROOT, 'build', 'assets');
const from = (...p: string[]) => path.join(ROOT, ...p);

const COPIES: [source: string, target: string][] = [
  [from('src', 'console', 'static'), 'console/static'],
  [from('node_modules', 'uplot', 'dist', 'uPlot.iife.min.js'), 'console/vendor/uplot.js'],
  [from('node_modules', 'uplot', 'dist', 'uPlot.min.css'), 'console/vendor/uplot.css'],
  [from('node_modules', 'uplot', 'LICENSE'), 'console/vendor/uplot.LICENSE.txt'],
  [from('node_modules', '@scalar', 'api-reference', 'dist', 'browser', 'standalone.js'), 'docs/vendor/scalar.js'],
];

const CLIENT = from('src', 'console', 'client');

/**
 * All the browser bundle may contain: the client, the views, the modules of constants
 * it shares with the server (src/db/enums.ts, src/auth/permissions.ts, src/lib/limits.ts and the fleet
 * protocol's, all free of runtime imports beyond each other), and Hono's JSX for the DOM. The
 * client takes the server's types by type-only imports; any server code reaching
 * the bundle (a value import by mistake) fails the build.
 */
const BUNDLE_MAY_CONTAIN = [
  'src/console/client/',
  'src/console/ui/',
  'src/db/enums.ts',
  'src/auth/permissions.ts',
  'src/lib/limits.ts',
  'prover-agent/src/protocol',
  'node_modules/hono/dist/',
];

rmSync(OUT, { recursive: true, force: true });
for (const [source, target] of COPIES) {
  const dest = path.join(OUT, target);
  mkdirSync(path.dirname(dest), { recursive: true });
  cpSync(source, dest, { recursive: true });
}

// console.js: the pages' client (deferred); theme.js: the saved light/dark choice, run in
// <head> before the first paint.
const { metafile } = await build({
  absWorkingDir: ROOT,
  entryPoints: { console: path.join(CLIENT, 'main.tsx'), theme: path.join(CLIENT, 'theme-boot.ts') },
  outdir: path.join(OUT, 'console', 'static'),
  tsconfig: path.join(CLIENT, 'tsconfig.json'),
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  sourcemap: 'linked',
  metafile: true,
  logLevel: 'warning',
});
const strays = Object.keys(metafile.inputs).filter((input) => !BUNDLE_MAY_CONTAIN.some((allowed) => input.startsWith(allowed)));
if (strays.length) {
  const ours = strays.filter((input) => !input.startsWith('node_modules/'));
  throw new Error(
    `build-assets: the console's browser bundle would contain modules it may not (server code imported as a value?): ${ours.join(', ')} and ${strays.length - ours.length} of node_modules`,
  );
}

const bundled = Object.entries(metafile.outputs).filter(([file]) => file.endsWith('.js'));
process.stderr.write(
  `build-assets: ${COPIES.length} entries into ${path.relative(ROOT, OUT)}; ${bundled.map(([file, o]) => `${path.basename(file)} ${(o.bytes / 1024).toFixed(1)} kB`).join(', ')}\n`,
);
