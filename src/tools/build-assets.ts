// Builds the Worker's static assets (wrangler.toml [assets], directory build/assets,
// ignored by git): the console's own script and styles (src/console/static) and the
// libraries the pages load, copied from node_modules so that nothing comes from a CDN:
// uPlot (the usage chart) and Scalar's API reference bundle (/docs).
// Run by wrangler before `wrangler dev`/`deploy` ([build] command) and by `npm test`.
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

rmSync(OUT, { recursive: true, force: true });
for (const [source, target] of COPIES) {
  const dest = path.join(OUT, target);
  mkdirSync(path.dirname(dest), { recursive: true });
  cpSync(source, dest, { recursive: true });
}
process.stderr.write(`build-assets: ${COPIES.length} entries into ${path.relative(ROOT, OUT)}\n`);
