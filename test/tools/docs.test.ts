// The guides (every Markdown file of the repository) hold up for their readers
// (docs/contributors.md "The docs, and the commands in them"): every
// relative link reaches a file of the repository and, with a #fragment, a heading of it (as
// GitHub names its anchors); every path of the repository the text names in code exists; every
// shell block says, on the line right above it, either `<!-- runs here -->` (and it runs here,
// offline and without a running stack: it is run) or `<!-- not run here: why -->`, so that
// nothing is run by accident (the suite may run as root; the guides hold `sudo`); no guide
// cites an issue number; the short paths (a first proof, inviting a teammate, an agent, a
// deploy) stay short; and a comment or message of the code that cites a guide's section
// (`docs/callers.md "Limits"`) names one it has.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import GithubSlugger from 'github-slugger';
import type { Code, Nodes, Root } from 'mdast';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { gfm } from 'micromark-extension-gfm';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../src/tools/wrangler.ts';

/** Every guide of the repository: the Markdown files git tracks. */
const DOCS = execFileSync('git', ['ls-files', '*.md'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f && existsSync(path.join(ROOT, f)));

/** The markers, one of which every shell block has on the line above it. */
const RUNS = /^<!-- runs here -->$/;
const NOT_RUN = /^<!-- not run here: (\S.*?) -->$/;
const SHELL = new Set(['sh', 'bash', 'shell']);
/** The first line of an untagged block that is a command (it must be tagged `sh`, or `text` if it is not meant to be run). */
const LOOKS_LIKE_A_COMMAND = /^(\$ |npm |npx |node |curl |sudo |git |docker |cargo |prover-agent |wrangler )/;
/** A file or folder of this repository named in code (`src/…/x.ts`, `test/e2e/`): not globs, braces, placeholders or import specifiers (`prover-agent/protocol`). */
const REPO_PATH = /^(?:src|test|prover-agent|migrations|docs|\.ci)\/[\w./-]*(?:\.\w+|\/)$/;

interface Doc {
  file: string;
  lines: string[];
  tree: Root;
  anchors: Set<string>;
}

const parsed = new Map<string, Doc>();
function doc(file: string): Doc {
  let d = parsed.get(file);
  if (!d) {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    const tree = fromMarkdown(text, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });
    const slugger = new GithubSlugger();
    const anchors = new Set(all(tree, 'heading').map((h) => slugger.slug(plain(h))));
    d = { file, lines: text.split('\n'), tree, anchors };
    parsed.set(file, d);
  }
  return d;
}

function all<T extends Nodes['type']>(node: Nodes, type: T): Extract<Nodes, { type: T }>[] {
  const found: Extract<Nodes, { type: T }>[] = [];
  const walk = (n: Nodes) => {
    if (n.type === type) found.push(n as Extract<Nodes, { type: T }>);
    if ('children' in n) n.children.forEach(walk);
  };
  walk(node);
  return found;
}

/** A heading's text as GitHub slugs it: the text of its children, code spans included. */
function plain(node: Nodes): string {
  if ('value' in node && node.type !== 'html') return node.value;
  return 'children' in node ? node.children.map(plain).join('') : '';
}

const line = (node: Nodes) => node.position?.start.line ?? 0;

/** What the line above a code block says of it. */
function markerOf(d: Doc, code: Code): 'runs' | 'not run' | undefined {
  const above = d.lines[line(code) - 2]?.trim() ?? '';
  return RUNS.test(above) ? 'runs' : NOT_RUN.test(above) ? 'not run' : undefined;
}

describe.each(DOCS)('%s', (file) => {
  const d = doc(file);
  const dir = path.dirname(file);

  it('links only to files of the repository and to headings they have', () => {
    const broken: string[] = [];
    for (const link of [...all(d.tree, 'link'), ...all(d.tree, 'definition')]) {
      if (/^[a-z][a-z+.-]*:|^\/\//i.test(link.url)) continue; // https:, mailto:: not ours to check
      const [target = '', fragment] = link.url.split('#');
      const targetFile = target ? path.normalize(path.join(dir, decodeURIComponent(target))) : file;
      if (!existsSync(path.join(ROOT, targetFile))) broken.push(`line ${line(link)}: ${link.url}: no file ${targetFile}`);
      else if (fragment !== undefined) {
        if (!targetFile.endsWith('.md')) broken.push(`line ${line(link)}: ${link.url}: a #fragment of a file that is not Markdown`);
        else if (!doc(targetFile).anchors.has(fragment))
          broken.push(`line ${line(link)}: ${link.url}: ${targetFile} has no heading #${fragment}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('names only paths that exist', () => {
    const missing = all(d.tree, 'inlineCode')
      .filter((c) => REPO_PATH.test(c.value))
      .filter((c) => !existsSync(path.join(ROOT, c.value)) && !existsSync(path.join(ROOT, dir, c.value)))
      .map((c) => `line ${line(c)}: ${c.value}`);
    expect(missing).toEqual([]);
  });

  it('cites no issue numbers', () => {
    const cited = d.lines.flatMap((l, i) => (/\bissues? #?\d+/i.test(l) ? [`line ${i + 1}: ${l.trim()}`] : []));
    expect(cited).toEqual([]);
  });

  it('tags every block of commands, and marks every shell block as run here or not', () => {
    const problems: string[] = [];
    for (const code of all(d.tree, 'code')) {
      const marked = markerOf(d, code);
      if (!code.lang && LOOKS_LIKE_A_COMMAND.test(code.value.trimStart()))
        problems.push(`line ${line(code)}: untagged commands: tag the block sh (and mark it) or text`);
      if (SHELL.has(code.lang ?? '') && !marked)
        problems.push(`line ${line(code)}: a shell block with neither <!-- runs here --> nor <!-- not run here: why --> above it`);
      if (marked && !SHELL.has(code.lang ?? '')) problems.push(`line ${line(code)}: a marker above a block that is not a shell block`);
    }
    expect(problems).toEqual([]);
  });

  const runnable = all(d.tree, 'code').filter((c) => SHELL.has(c.lang ?? '') && markerOf(d, c) === 'runs');
  it.runIf(runnable.length > 0).each(runnable.map((c) => [`line ${line(c)}: ${c.value.split('\n')[0]}`, c] as const))(
    'runs the shell block at %s',
    (_name, code: Code) => {
      const run = spawnSync('bash', ['-eo', 'pipefail', '-c', code.value], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
        timeout: 240_000,
      });
      expect({ status: run.status, signal: run.signal, stderr: run.status === 0 ? '' : run.stderr + run.stdout }).toEqual({
        status: 0,
        signal: null,
        stderr: '',
      });
    },
  );
});

/** The line a heading starts on, and the line its section's last line (before the next heading of its level or higher) is. */
function section(file: string, title: string): { start: number; end: number } {
  const d = doc(file);
  const headings = all(d.tree, 'heading');
  const i = headings.findIndex((h) => plain(h) === title);
  expect(i, `${file} has a heading "${title}"`).toBeGreaterThanOrEqual(0);
  const h = headings[i];
  const next = headings.slice(i + 1).find((n) => n.depth <= h.depth);
  let end = next ? line(next) - 1 : d.lines.length;
  while (end > line(h) && !d.lines[end - 1]?.trim()) end--;
  return { start: line(h), end };
}

describe('the short paths', () => {
  it('a first proof: the README from its top to the end of its first proof, at most 70 lines', () => {
    expect(section('README.md', 'A first proof').end).toBeLessThanOrEqual(70);
  });

  it('inviting a teammate: one section of docs/teams.md, at most 30 lines', () => {
    const { start, end } = section('docs/teams.md', 'Invite a teammate');
    expect(end - start + 1).toBeLessThanOrEqual(30);
  });

  it('running an agent: docs/gpu-hosts.md from its top to its service unit, at most 120 lines', () => {
    expect(section('docs/gpu-hosts.md', 'Run it as a service').end).toBeLessThanOrEqual(120);
  });

  it('deploying: docs/deploy.md from its top to its first config, at most 120 lines', () => {
    expect(section('docs/deploy.md', 'After the first deploy').end).toBeLessThanOrEqual(120);
  });
});

describe('citations of the guides in the code and in the guides', () => {
  // Migrations are history: they cite the README as it was when they were written.
  const files = execFileSync('git', ['ls-files', 'src', 'prover-agent', 'test', 'wrangler.toml', '.ci', '.dependency-cruiser.cjs'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f && existsSync(path.join(ROOT, f)))
    .concat(DOCS);
  const CITATION = /(?<![\w/.-])(README(?:\.md)?|SECURITY\.md|prover-agent\/README\.md|docs\/[\w-]+\.md) ["“]([^"”]+)["”]/g;

  it('name sections the guides have', () => {
    const stale: string[] = [];
    for (const file of files) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      for (const m of text.matchAll(CITATION)) {
        const [, guide = '', cited = ''] = m;
        // A citation may run over lines of a comment: `// `, ` * `, `# ` between its words.
        const sought = cited
          .replace(/\s*\n\s*(?:\/\/|\*|#|--)?\s*/g, ' ')
          .replace(/\s+/g, ' ')
          .toLowerCase();
        const target = guide === 'README' ? 'README.md' : guide;
        const headings = all(doc(target).tree, 'heading').map((h) => plain(h).toLowerCase());
        if (!headings.some((h) => h.startsWith(sought))) stale.push(`${file}: ${m[0]}`);
      }
    }
    expect(stale).toEqual([]);
  });
});
