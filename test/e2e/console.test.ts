// The console in a real browser (Debian's chromium, driven by playwright-core) against
// the real local stack: wrangler dev and dev-engine prover-agents. Every page is
// screenshotted at desktop width and at 390 px (a phone) into test-artifacts/console/
// (ignored by git) for a person to look at, and no element of it may stick out of the
// viewport at either width; the last test checks every page of the console was shot.
// Chromium: CHROMIUM_PATH, default /usr/bin/chromium (`apt-get install -y chromium`).
import { once } from 'node:events';
import { mkdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization, createUser } from '../../src/admin/statements.ts';
import { CONSOLE_PAGES } from '../../src/console/ui/site.ts';
import { hashPassword } from '../../src/features/accounts/password.ts';
import { caller, registerGuest, ROOT, startStack, type AgentProcess, type Stack } from './stack.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = join(ROOT, 'test-artifacts', 'console');
const OWNER = 'owner@e2e.test';
const PASSWORD = 'owner password 1';

let stack: Stack;
let browser: Browser;
let agent: AgentProcess | undefined;
/** Requests the browser tried to make anywhere but the stack: the console must work offline. */
const foreign: string[] = [];
/** Native dialogs (alert, confirm) a page opened: the console asks in the page instead. */
const nativeDialogs: string[] = [];
/** The console pages (body[data-page]) screenshotted at both widths. */
const shotPages = new Set<string>();

const DESKTOP = { width: 1200, height: 900 };
const PHONE = { width: 390, height: 844 };

beforeAll(async () => {
  stack = await startStack();
  const step = await createUser({
    email: OWNER,
    orgId: 'org_e2e',
    role: 'owner',
    operator: true,
    consoleUrl: stack.url,
    passwordHash: await hashPassword(PASSWORD),
  });
  for (const sql of step.sql) await stack.sql(sql);
  await mkdir(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in a container: no sandbox; no GPU; nothing that phones home.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

async function newContext(): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: DESKTOP });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.url });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(stack.url) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  context.on('page', (p) => p.on('dialog', (d) => void nativeDialogs.push(`${d.type()}: ${d.message()}`)));
  return context;
}

/** Elements whose box sticks out of the viewport's sides (zero-sized and display:none ones have no box). */
function overflowing(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const out: string[] = [];
    for (const el of document.querySelectorAll('body *')) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue;
      if (box.left < -0.5 || box.right > width + 0.5)
        out.push(
          `<${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''} class="${el.getAttribute('class') ?? ''}"> ${Math.round(box.left)}..${Math.round(box.right)} of ${width}: ${(el.textContent ?? '').trim().slice(0, 40)}`,
        );
    }
    if (document.documentElement.scrollWidth > width) {
      out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px wide`);
      // Whose content (unbroken text) reaches past the edge, though its box does not.
      for (const el of document.querySelectorAll('body *')) {
        const box = el.getBoundingClientRect();
        if (el.scrollWidth > el.clientWidth && getComputedStyle(el).overflowX === 'visible' && box.left + el.scrollWidth > width + 0.5)
          out.push(`<${el.tagName.toLowerCase()}> content ${el.scrollWidth} px wide: ${(el.textContent ?? '').trim().slice(0, 40)}`);
      }
    }
    return out;
  });
}

const frames = (page: Page) => page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));

/**
 * Screenshots the page as it is at desktop width and at 390 px (then back), failing if
 * anything sticks out of the viewport at either.
 */
async function shot(page: Page, name: string) {
  const viewport = page.viewportSize() ?? DESKTOP;
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const wide = await overflowing(page);
  await page.setViewportSize(PHONE);
  let narrow: string[];
  try {
    await frames(page);
    await page.screenshot({ path: join(SHOTS, `${name}-390.png`), fullPage: true });
    narrow = await overflowing(page);
  } finally {
    await page.setViewportSize(viewport);
    await frames(page);
  }
  expect(wide, `${name} at ${viewport.width} px`).toEqual([]);
  expect(narrow, `${name} at 390 px`).toEqual([]);
  const shown = await page.evaluate(() => document.body.dataset.page);
  if (shown) shotPages.add(shown);
}

/** Confirms in the page's own dialog (never the browser's confirm()), which names what the action affects. */
async function confirmInPage(page: Page, title: string | RegExp, action: string, name?: string) {
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  expect(await page.locator('#confirm-title').textContent()).toMatch(title);
  if (name) await shot(page, name);
  await dialog.getByRole('button', { name: action }).click();
  await dialog.waitFor({ state: 'hidden' });
}

/** Opens a console page and waits until its script has filled it. */
async function open(page: Page, path: string) {
  await page.goto(stack.url + path);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
}

async function signIn(page: Page, email: string, password: string) {
  await page.goto(`${stack.url}/console/signin`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/console\/overview$/);
  await page.waitForSelector('body[data-ready="true"]');
}

/**
 * The link of the newest mail to `to` with `subject`, read as a developer would: on
 * the console's Outbox page (npm start's local mail; nothing is really sent).
 */
async function mailedLink(page: Page, to: string, subject: string): Promise<string> {
  let href: string | null = null;
  await expect
    .poll(async () => {
      await open(page, '/console/outbox');
      const row = page.locator('#outbox tbody tr', { hasText: to }).filter({ hasText: subject }).first();
      href = (await row.count()) ? await row.locator('a').getAttribute('href') : null;
      return href;
    })
    .not.toBeNull();
  // Once is enough: the page is the same each time.
  if (!shotPages.has('outbox')) await shot(page, '19-outbox');
  return href!;
}

/** Stops the agent (SIGTERM, SIGKILL after 10 s): jobs submitted now stay queued. */
async function stopAgent() {
  if (!agent) return;
  const a = agent;
  agent = undefined;
  a.signal('SIGTERM');
  const timer = setTimeout(() => a.signal('SIGKILL'), 10_000);
  await a.exited;
  clearTimeout(timer);
}

describe('the console in chromium', () => {
  let page: Page;
  let apiKey: string;
  let program: string;

  it('signs in with a wrong password refused, then the right one', async () => {
    const context = await newContext();
    page = await context.newPage();
    await page.goto(`${stack.url}/console/signin`);
    await shot(page, '01-signin');
    await page.getByLabel('Email').fill(OWNER);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#status').textContent()).toBe('Invalid email or password');
    await signIn(page, OWNER, PASSWORD);
    expect(await page.locator('#org-select option:checked').textContent()).toBe('e2e (owner)');
    // The organization's page: its first steps; only a key (the stack's) is there yet.
    expect(await page.locator('h1').textContent()).toBe('e2e');
    expect(await page.locator('#steps li.done .step-title').allTextContents()).toEqual(['Create an API keydone']);
    expect(await page.locator('#steps .step-title').allTextContents()).toEqual([
      'Create an API keydone',
      'Register a program',
      'Prove it',
      'Follow a proof',
      'Be told when proofs finish',
      'Invite your team',
      'Set a monthly budget',
    ]);
    await shot(page, '01b-overview-new');
    // The refresh token is an HttpOnly cookie the page's script cannot read.
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === 'console_refresh')).toMatchObject({
      httpOnly: true,
      secure: true,
      sameSite: 'Strict',
      path: '/console/v1/auth',
    });
    expect(await page.evaluate(() => document.cookie)).toBe('');
  });

  it('shows an empty organization the next step, with commands to copy that name this service', async () => {
    await open(page, '/console/projects');
    const snippet = page.locator('#projects-empty .snippet code');
    const code = (await snippet.textContent())!;
    expect(code).toContain(`curl -s "${stack.url}/v1/programs?config_id=$CONFIG_ID&project_name=my-project&program_name=my-program"`);
    expect(code).toContain(`cargo axiom register --api-url ${stack.url}/v1 --api-key $API_KEY`);
    await page.locator('#projects-empty').getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => page.locator('#status').textContent()).toBe('Copied to the clipboard.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(code);
    await shot(page, '06a-projects-empty');
    await open(page, '/console/proofs');
    expect(await page.locator('#proofs-empty').textContent()).toContain('No proofs yet.');
    expect(await page.locator('#proofs tbody').count()).toBe(0);
    await shot(page, '07a-proofs-empty');
  });

  it('creates an API key with a scope, shown once, that registers and proves a program on the public API', async () => {
    await open(page, '/console/keys');
    await page.getByLabel('Name (optional)').fill('e2e key');
    expect(await page.locator('#key-form select[name="scope"] option').allTextContents()).toEqual(['full', 'prove', 'read']);
    await page.locator('#key-form select[name="scope"]').selectOption('prove');
    // No answer at all (the network): the page says so in words, and Try again makes the key.
    const keysApi = '**/console/v1/orgs/*/api-keys';
    await page.route(keysApi, (route) => (route.request().method() === 'POST' ? route.abort('internetdisconnected') : route.continue()));
    await page.getByRole('button', { name: 'Create API key' }).click();
    await expect
      .poll(() => page.locator('#status').textContent())
      .toBe('The service could not be reached: the network or the server is down. Check the connection, then try again.');
    await shot(page, '02a-api-keys-unreachable');
    await page.unroute(keysApi);
    await page.locator('#status-retry').click();
    await page.waitForSelector('#new-key:not([hidden])');
    apiKey = (await page.locator('#new-key-value').textContent())!;
    expect(apiKey).toMatch(/^sk_[0-9a-f]{48}$/);
    // The next step: try it, and point cargo axiom at this service.
    expect(await page.locator('.snippet code').textContent()).toBe(
      [
        `export API_KEY=${apiKey}`,
        `curl -s ${stack.url}/v1/validate_api_key -H "Service-API-Key: $API_KEY"`,
        `cargo axiom register --api-url ${stack.url}/v1 --api-key $API_KEY`,
      ].join('\n'),
    );
    await expect.poll(() => page.locator('#keys tbody').textContent()).toContain('e2e key');
    const row = page.locator('#keys tbody tr', { hasText: 'e2e key' });
    // Its name, and beside it who made it.
    expect(await row.locator('td').nth(1).textContent()).toBe(OWNER);
    expect(await row.locator('td').nth(3).textContent()).toBe('prove');
    await shot(page, '02-api-keys');

    agent = await stack.startAgent({ name: 'console-agent' });
    const api = caller({ url: stack.url, apiKey });
    program = await registerGuest(api, stack.devConfig, 'hello.elf');
    expect((await api.json('GET', `/v1/programs/${program}`)).status).toBe('ready');
    // The organization's page: key and program done; proving it is next, with its id.
    await open(page, '/console/overview');
    expect(await page.locator('#steps li.done .step-title').allTextContents()).toEqual(['Create an API keydone', 'Register a programdone']);
    expect(await page.locator('#steps').textContent()).toContain(`cargo axiom prove --program-id ${program} --input 0x0168656c6c6f`);
    await shot(page, '01c-overview-program');
  });

  it('watches a proof go from Queued to Succeeded without reloading, and reads its logs', async () => {
    await stopAgent();
    const api = caller({ url: stack.url, apiKey });
    const { id: proof } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0148656c6c6f'] });
    await open(page, `/console/proofs/${proof}`);
    expect(await page.locator('#proof-state').textContent()).toBe('Queued');
    // The dev engine proves on the CPU: no GPU, whatever the proof asked for.
    expect(await page.locator('#proof-facts').textContent()).toContain('Runs onthe CPU');
    await shot(page, '03-proof-queued');
    let navigations = 0;
    page.on('framenavigated', () => navigations++);
    agent = await stack.startAgent({ name: 'console-agent-2' });
    await page.waitForFunction(() => document.querySelector('#proof-state')?.textContent === 'Succeeded', undefined, { timeout: 60_000 });
    expect(navigations).toBe(0);
    expect(await page.locator('.timeline li.done').allTextContents()).toContain('Succeeded');
    await expect.poll(async () => (await page.locator('#logs').textContent())!.length).toBeGreaterThan(0);
    const logs = await (await fetch(`${stack.url}/v1/proofs/${proof}/logs`, { headers: { 'Service-API-Key': apiKey } })).text();
    expect(await page.locator('#logs').textContent()).toBe(logs);
    await expect.poll(() => page.getByRole('button', { name: 'Download stark proof' }).count()).toBe(1);
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download stark proof' }).click()]);
    expect(file.suggestedFilename()).toBe(`stark-proof-${proof}.json`);
    const saved = JSON.parse(await readFile(await file.path(), 'utf8'));
    expect(saved).toEqual(
      await (await fetch(`${stack.url}/v1/proofs/${proof}/proof/stark`, { headers: { 'Service-API-Key': apiKey } })).json(),
    );
    await shot(page, '04-proof-succeeded');

    expect(await page.locator('#proof-facts').textContent()).toMatch(/Cost\$0\.\d+Runs onthe CPU, machine type e2e/);

    // The program page lists it; with no execution yet, it says how to run one (its real id), and has no estimate.
    await open(page, `/console/programs/${program}`);
    expect(await page.locator('#proofs tbody').textContent()).toContain('Succeeded');
    expect(await page.locator('#executions-empty code').textContent()).toContain(
      `curl -s "${stack.url}/v1/executions?program_id=${program}&mode=meter"`,
    );
    expect(await page.locator('#estimate-empty').textContent()).toContain('the program has no succeeded execution');
    await shot(page, '05-program');
    await page.locator('#program-facts a').first().click();
    await page.waitForURL(/\/console\/projects\/[^/]+$/);
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.locator('#programs tbody').textContent()).toContain('hello.elf');
    await shot(page, '05b-project');
    await open(page, '/console/projects');
    expect(await page.locator('#projects tbody tr').count()).toBe(1);
    await shot(page, '06-projects');
    await open(page, '/console/proofs?');
    await shot(page, '07-proofs');
  });

  it('shows grey rows while a list loads, and, when it cannot load, what went wrong and Try again', async () => {
    const list = '**/console/v1/orgs/*/proofs?*';
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route(list, async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(`${stack.url}/console/proofs`);
    await page.waitForSelector('#proofs[aria-busy="true"] .skeleton');
    await shot(page, '07b-proofs-loading');
    release();
    await page.waitForSelector('body[data-ready="true"]');
    await page.unroute(list);

    await page.route(list, (route) =>
      route.fulfill({ status: 500, contentType: 'application/json', body: '{"detail":"Internal Server Error"}' }),
    );
    await page.goto(`${stack.url}/console/proofs`);
    await page.waitForSelector('#error-state');
    expect(await page.locator('#error-state').textContent()).toContain(
      'The service failed to answer (HTTP 500). Try again; if it keeps failing, tell the service’s operator.',
    );
    await shot(page, '07c-proofs-error');
    await page.unroute(list);
    await page.getByRole('button', { name: 'Try again' }).click();
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.locator('#proofs tbody tr').count()).toBe(1);
  });

  it('cancels a queued proof from the console', async () => {
    await stopAgent();
    const api = caller({ url: stack.url, apiKey });
    const { id: proof } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0148656c6c6f'] });
    await open(page, `/console/proofs/${proof}`);
    await page.getByRole('button', { name: 'Cancel proof' }).click();
    await confirmInPage(page, `Cancel the proof ${proof.slice(0, 8)} of hello.elf?`, 'Cancel proof', '08a-confirm-cancel');
    await page.waitForFunction(() => document.querySelector('#proof-state')?.textContent === 'Canceled');
    expect((await api.json('GET', `/v1/proofs/${proof}`)).state).toBe('Canceled');
    expect(await page.getByRole('button', { name: 'Cancel proof' }).isHidden()).toBe(true);
    await shot(page, '08-proof-canceled');
    // Then its files are deleted from its page: the record stays, a tombstone.
    await page.getByRole('button', { name: 'Delete proof files' }).click();
    await confirmInPage(page, `Delete the files of the proof ${proof.slice(0, 8)} of hello.elf?`, 'Delete proof files');
    await page.waitForFunction(() => document.querySelector('#proof-facts')?.textContent?.includes('Files deleted'));
    expect((await api.json('GET', `/v1/proofs/${proof}`)).deleted_at).toEqual(expect.any(String));
    expect(await page.getByRole('button', { name: 'Delete proof files' }).isHidden()).toBe(true);
  });

  it('shows usage with a chart and the operators’ fleet page', async () => {
    await open(page, '/console/usage');
    expect(await page.locator('#usage-chart canvas').count()).toBe(1);
    // Two proofs so far: the one that succeeded and the one canceled.
    expect(await page.locator('#usage-totals dd').first().textContent()).toBe('2');
    expect(await page.locator('#usage-projects tbody').textContent()).toContain('hello.elf');
    await shot(page, '09-usage');
    agent ??= await stack.startAgent({ name: 'console-agent-3' });
    await open(page, '/console/fleet');
    expect(await page.locator('#agents tbody').textContent()).toContain('console-agent');
    // A dev-engine agent runs jobs on its CPU.
    expect(await page.locator('#agents tbody td[data-label="Runs on"]').first().textContent()).toBe('the CPU');
    // How to add another: with this deployment's URL (a local stack: a second local agent).
    expect(await page.locator('#add-host').textContent()).toContain(`npm run agent -- --api-url ${stack.url} --agent-token <the token>`);
    await shot(page, '10-fleet');
    // Dark theme, by the toggle, kept across pages.
    await page.getByRole('button', { name: 'Switch between light and dark' }).click();
    const theme = await page.evaluate(() => document.documentElement.dataset.theme);
    await open(page, '/console/projects');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
    await shot(page, '11-projects-toggled-theme');
  });

  it('sets the budget and the default job limits, shows a proving estimate on the program page, and a queued job’s limits and waiting reason on its page', async () => {
    const api = caller({ url: stack.url, apiKey });
    // The budget panel: the owner sets it, its facts show it.
    await open(page, '/console/usage');
    await page.locator('#budget-form input[name="usd"]').fill('500');
    await page.locator('#budget-form input[name="gpu_hours"]').fill('100');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await expect.poll(() => page.locator('#budget-facts').textContent()).toContain('Spending budget$500.00');
    expect(await page.locator('#budget-facts').textContent()).toMatch(/GPU-hour budget100/);
    // The organization's default job limits: set by the form, then applied to a submission naming none.
    await page.locator('#org-limits-form input[name="cycles"]').fill('50000000');
    await page.locator('#org-limits-form input[name="usd"]').fill('2');
    await page.locator('#org-limits-form input[name="deadline"]').fill('3600');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(() => page.locator('#org-limits-facts').textContent()).toContain('Default cycle limit50,000,000');
    expect(await page.locator('#org-limits-facts').textContent()).toContain('Default cost limit$2.00');
    expect(await page.locator('#org-limits-facts').textContent()).toContain('Default deadline3,600 s');
    await shot(page, '09b-usage-budget-limits');

    // A succeeded execution: the program page estimates proving its run from the proof the fleet measured above.
    agent ??= await stack.startAgent({ name: 'console-agent-estimate' });
    const { id: run } = await api.json('POST', `/v1/executions?program_id=${program}&mode=segment`, { input: ['0x0148656c6c6f'] });
    await expect.poll(async () => (await api.json('GET', `/v1/executions/${run}`)).status, { timeout: 60_000 }).toBe('Succeeded');
    await open(page, `/console/programs/${program}`);
    expect(await page.locator('#estimate-facts').textContent()).toContain(run);
    expect(await page.locator('#estimate-facts').textContent()).toMatch(/Estimated proving time[\d.]+ s/);
    expect(await page.locator('#estimate-facts').textContent()).toMatch(/Proofstark on the CPU, machine type e2e/);
    expect(await page.locator('#estimate-facts').textContent()).toMatch(/Measured proofs it rests on1 proof$/);
    await shot(page, '09c-program-estimate');
    // Its row links the execution's page: cycles, segments, its limits (the organization's defaults), the estimate.
    await page.locator(`#executions a[href="/console/executions/${run}"]`).click();
    await page.waitForURL(new RegExp(`/console/executions/${run}$`));
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.locator('#execution-status').textContent()).toBe('Succeeded');
    expect(await page.locator('#execution-limits').textContent()).toMatch(/^50,000,000 cycles · \$2\.00 · done by /);
    expect(await page.locator('#execution-facts').textContent()).toMatch(/Modesegment.*Cycles[\d,]+Segments\d/);
    expect(await page.locator('#estimate-facts').textContent()).toMatch(/Estimated proving time[\d.]+ s/);
    await shot(page, '09d-execution');

    // With no agent online, a queued execution and proof say why on their pages once the sweep has looked.
    await stopAgent();
    const { id: queuedRun } = await api.json('POST', `/v1/executions?program_id=${program}`, { input: ['0x0148656c6c6f'] });
    const { id: queuedProof } = await api.json('POST', `/v1/proofs?program_id=${program}&cycle_limit=1234`, { input: ['0x0148656c6c6f'] });
    // The stopped agents are gone: one killed before its goodbye (stopAgent's SIGKILL after
    // 10 s) would count for AGENT_STALE_SECONDS (5 minutes) more, so age them out now.
    await stack.sql(`UPDATE agents SET last_seen_at = 0 WHERE left_at IS NULL`);
    await expect
      .poll(
        async () => {
          await stack.sql(`UPDATE jobs SET notified_at = 0 WHERE status = 'queued'`);
          await stack.sweep();
          return (await api.json('GET', `/v1/proofs/${queuedProof}`)).waiting_reason;
        },
        { timeout: 90_000, interval: 2_000 },
      )
      .toBe('no_agent');
    await open(page, `/console/executions/${queuedRun}`);
    expect(await page.locator('#execution-status').textContent()).toBe('Queued');
    expect(await page.locator('#execution-waiting').textContent()).toBe('no prover agent is online');
    expect(await page.locator('#execution-start-estimate').textContent()).toBe(
      'No estimate: it cannot start while its waiting reason (no_agent) holds',
    );
    await shot(page, '09e-execution-queued');
    await open(page, `/console/proofs/${queuedProof}`);
    expect(await page.locator('#proof-waiting').textContent()).toBe('no prover agent is online (1 job ahead)'); // the execution above
    expect(await page.locator('#proof-limits').textContent()).toMatch(/^1,234 cycles · \$2\.00 · done by /);
    await shot(page, '09f-proof-queued');
    // Left as found: the proof canceled (later tests count proof events), the defaults cleared.
    await api.json('POST', `/v1/proofs/${queuedProof}/cancel`, {});
    await open(page, '/console/usage');
    for (const name of ['cycles', 'usd', 'deadline']) await page.locator(`#org-limits-form input[name="${name}"]`).fill('');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(() => page.locator('#org-limits-facts').textContent()).toContain('Default cycle limitnone');
  }, 180_000);

  it('adds a webhook endpoint, its secret shown once, and sees its deliveries arrive signed', async () => {
    // A receiver on loopback, as local development allows.
    const received: { headers: Record<string, string>; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        received.push({ headers: req.headers as Record<string, string>, body });
        res.writeHead(200).end('ok');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      await open(page, '/console/webhooks');
      await page.getByLabel('Endpoint URL').fill(url);
      await page.getByLabel('Only these:').check();
      await page.getByLabel('proof.succeeded').check();
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.waitForSelector('#new-secret:not([hidden])');
      const secret = (await page.locator('#new-secret-value').textContent())!;
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      await expect.poll(() => page.locator('#webhooks tbody').textContent()).toContain(url);
      expect(await page.locator('#webhooks tbody').textContent()).toContain('proof.succeeded');
      await shot(page, '16-webhooks');

      // A proof proved through the API reaches it, signed with that secret.
      agent ??= await stack.startAgent({ name: 'console-agent-4' });
      const api = caller({ url: stack.url, apiKey });
      const { id: proof } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0148656c6c6f'] });
      await expect.poll(() => received.length, { timeout: 60_000 }).toBe(1);
      const event = new Webhook(secret).verify(received[0].body, received[0].headers) as {
        type: string;
        data: { id: string; state: string };
      };
      expect(event).toMatchObject({ type: 'proof.succeeded', data: { id: proof, state: 'Succeeded' } });

      // The endpoint's page shows the delivery and its attempt; a test event follows it in.
      await page.getByRole('link', { name: url }).click();
      await page.waitForSelector('body[data-ready="true"]');
      expect(await page.locator('#webhook-facts').textContent()).toContain('enabled');
      await expect
        .poll(async () => {
          await page.getByRole('button', { name: 'Refresh' }).click();
          return page.locator('#deliveries tbody').textContent();
        })
        .toMatch(/proof\.succeeded.*delivered.*HTTP 200/);
      await page.getByRole('button', { name: 'Send test event' }).click();
      await expect
        .poll(() => page.locator('#deliveries tbody tr').first().textContent(), { timeout: 30_000 })
        .toMatch(/webhook\.test.*delivered.*HTTP 200/);
      expect(received.map((r) => r.headers['webhook-id'])).toEqual(
        await page.locator('#deliveries tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-delivery')).reverse()),
      );
      await shot(page, '17-webhook-deliveries');
    } finally {
      server.close();
    }
  });

  it('revokes the key: the public API then answers 401', async () => {
    await open(page, '/console/keys');
    const revoke = page.getByRole('button', { name: new RegExp(`^Revoke key ${apiKey.slice(0, 11)}`) });
    // Dismissed (Escape): nothing happens.
    await revoke.click();
    await page.getByRole('dialog').waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    expect((await fetch(`${stack.url}/v1/validate_api_key`, { headers: { 'Service-API-Key': apiKey } })).status).toBe(200);
    await revoke.click();
    await confirmInPage(page, `Revoke the API key “e2e key” of ${OWNER} (${apiKey.slice(0, 11)}…)?`, 'Revoke key', '02b-confirm-revoke');
    await expect.poll(() => page.locator('#status').textContent()).toBe('Key revoked.');
    const res = await fetch(`${stack.url}/v1/validate_api_key`, { headers: { 'Service-API-Key': apiKey } });
    expect(res.status).toBe(401);
  });

  it('invites a member by email: the link reaches them through the outbox, never the inviter; they join and are refused member management', async () => {
    await open(page, '/console/members');
    await page.getByLabel('Email').fill('newbie@e2e.test');
    await page.locator('#invite-create select[name="role"]').selectOption('member');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await expect.poll(() => page.locator('#status').textContent()).toBe('Invitation sent to newbie@e2e.test.');
    await expect.poll(() => page.locator('#invites tbody').textContent()).toContain('newbie@e2e.test');
    // The inviter's page holds no link.
    expect(await page.content()).not.toContain('#token=');
    // Under npm start's outbox sender the Outbox is in the navigation.
    expect(await page.locator('#nav-outbox').isVisible()).toBe(true);
    // A viewer (reads only) is invited the same way.
    await page.getByLabel('Email').fill('reader@e2e.test');
    await page.locator('#invite-create select[name="role"]').selectOption('viewer');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await expect.poll(() => page.locator('#invites tbody tr', { hasText: 'reader@e2e.test' }).textContent()).toContain('viewer');
    await shot(page, '12-members');

    const memberContext = await newContext();
    const member = await memberContext.newPage();
    const link = await mailedLink(member, 'newbie@e2e.test', 'You are invited to e2e');
    expect(link).toMatch(new RegExp(`^${stack.url}/console/invite#token=inv_[0-9a-f]{64}$`));
    await member.goto(link);
    await expect.poll(() => member.locator('#invite-summary').textContent()).toBe('newbie@e2e.test is invited to e2e as member.');
    expect(member.url()).toBe(`${stack.url}/console/invite`); // the token left the address bar
    await shot(member, '13-invite');
    await member.getByLabel('Your name').fill('New Bie');
    await member.getByLabel(/Choose a password/).fill('newbie password');
    await member.getByRole('button', { name: 'Join' }).click();
    // Joined: signed in at once, on the organization's page, with a welcome and a member's first steps.
    await member.waitForURL(/\/console\/overview\?org=org_e2e&welcome=1$/);
    await member.waitForSelector('body[data-ready="true"]');
    expect(await member.locator('#welcome').textContent()).toContain('Welcome to e2e, New Bie!');
    expect(await member.locator('#org-select option:checked').textContent()).toBe('e2e (member)');
    expect(await member.locator('#steps .step-title').allTextContents()).toEqual([
      'Create an API key',
      'Register a programdone',
      'Prove itdone',
      'Follow a proofdone',
    ]);
    // A member's navigation has no Members page; opened anyway, it says who manages members.
    expect(await member.locator('#nav-members').isHidden()).toBe(true);
    expect(await member.locator('#nav-keys').isVisible()).toBe(true);
    await shot(member, '13b-welcome-member');
    // A member's API keys are their own: none yet, and the page says what one is for.
    await open(member, '/console/keys');
    expect(await member.locator('#keys-empty').textContent()).toContain('No API keys yet.');
    await open(member, '/console/members');
    expect(await member.locator('#members-refused').textContent()).toContain('Owners and admins manage the members of e2e.');
    expect(await member.locator('#members-section').count()).toBe(0);
    expect(await member.locator('#status').textContent()).toBe('');
    await shot(member, '14-member-refused');
    // The API refuses too, whatever a page shows.
    const signin = await fetch(`${stack.url}/console/v1/auth/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Console-CSRF': '1', origin: stack.url },
      body: JSON.stringify({ email: 'newbie@e2e.test', password: 'newbie password' }),
    });
    const { access_token } = await signin.json();
    const members = await fetch(`${stack.url}/console/v1/orgs/org_e2e/members`, { headers: { authorization: `Bearer ${access_token}` } });
    expect(members.status).toBe(403);
    await memberContext.close();

    // The owner sees them joined, in the list and the audit log, and revokes the viewer's invitation, named in the dialog.
    await open(page, '/console/members');
    expect(await page.locator('#members tbody').textContent()).toContain('newbie@e2e.test');
    expect(await page.locator('#audit tbody').textContent()).toContain('invite.accept');
    await page.getByRole('button', { name: 'Revoke the invitation of reader@e2e.test' }).click();
    await confirmInPage(page, 'Revoke the invitation of reader@e2e.test?', 'Revoke invitation', '12b-confirm-revoke-invitation');
    await expect.poll(() => page.locator('#invites-empty').count()).toBe(1);
  });

  it('resets a forgotten password: asks on the sign-in page, opens the emailed link, signs in with the new one', async () => {
    const context = await newContext();
    const p = await context.newPage();
    await p.goto(`${stack.url}/console/signin`);
    await p.getByRole('link', { name: 'Forgot your password?' }).click();
    await p.waitForSelector('body[data-ready="true"]');
    await p.getByLabel('Email').fill('newbie@e2e.test');
    await p.getByRole('button', { name: 'Email me a link' }).click();
    await expect
      .poll(() => p.locator('#status').textContent())
      .toBe('If an account has this email, a link to reset its password is on its way.');
    await shot(p, '18-forgot-password');
    const link = await mailedLink(p, 'newbie@e2e.test', 'Reset your proving console password');
    expect(link).toMatch(new RegExp(`^${stack.url}/console/reset-password#token=rst_[0-9a-f]{64}$`));
    await p.goto(link);
    await p.waitForSelector('body[data-ready="true"]');
    expect(p.url()).toBe(`${stack.url}/console/reset-password`);
    await shot(p, '18b-reset-password');
    await p.getByLabel(/New password/).fill('newbie new password');
    await p.getByRole('button', { name: 'Set password' }).click();
    await p.waitForURL(/\/console\/signin\?email=/);
    await signIn(p, 'newbie@e2e.test', 'newbie new password');
    // The link worked once.
    await p.goto(link);
    await p.waitForSelector('body[data-ready="true"]');
    await p.getByLabel(/New password/).fill('a third password');
    await p.getByRole('button', { name: 'Set password' }).click();
    await expect.poll(() => p.locator('#status').textContent()).toBe('This link is unknown, used or expired: ask for a new one');
    await context.close();
  });

  it('lists your sessions; ending another browser’s signs that browser out at once', async () => {
    const context = await newContext();
    const other = await context.newPage();
    await signIn(other, OWNER, PASSWORD);
    await open(page, '/console/sessions');
    const rows = page.locator('#sessions tbody tr');
    expect(await page.locator('#sessions tbody tr[data-current="true"]').count()).toBe(1);
    expect(await rows.count()).toBeGreaterThanOrEqual(2);
    await shot(page, '23-sessions');
    // The newest session is the other browser's (the list is oldest first).
    await rows.last().getByRole('button', { name: 'End' }).click();
    await confirmInPage(page, /^End the session signed in /, 'End session');
    await expect.poll(() => page.locator('#status').textContent()).toBe('Session ended.');
    expect(await page.locator('#sessions tbody tr[data-current="true"]').count()).toBe(1);
    await other.goto(`${stack.url}/console/overview`);
    await other.waitForURL(/\/console\/signin/);
    await context.close();
  });

  it('an existing account accepts an invitation by signing in as itself, never with a password on the invitation', async () => {
    // A second organization, owned by the e2e owner (create-user on an existing email: membership only).
    for (const sql of createOrganization('e2e two', 'org_e2e_two').sql) await stack.sql(sql);
    for (const sql of (
      await createUser({ email: OWNER, orgId: 'org_e2e_two', role: 'owner', consoleUrl: stack.url }, undefined, { has_password: true })
    ).sql)
      await stack.sql(sql);
    const signin = await fetch(`${stack.url}/console/v1/auth/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Console-CSRF': '1', origin: stack.url },
      body: JSON.stringify({ email: OWNER, password: PASSWORD }),
    });
    const { access_token } = await signin.json();
    const invited = await fetch(`${stack.url}/console/v1/orgs/org_e2e_two/invites`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${access_token}` },
      body: JSON.stringify({ email: 'newbie@e2e.test', role: 'admin' }),
    });
    expect(invited.status).toBe(201);
    expect(await invited.json()).not.toHaveProperty('link');

    const context = await newContext();
    const p = await context.newPage();
    await p.goto(await mailedLink(p, 'newbie@e2e.test', 'You are invited to e2e two'));
    await p.waitForSelector('body[data-ready="true"]');
    expect(await p.locator('#invite-form').isHidden()).toBe(true);
    expect(await p.locator('#invite-sign-in').textContent()).toContain(
      'newbie@e2e.test has an account: sign in as it to accept the invitation.',
    );
    await shot(p, '20-invite-existing');
    await p.getByRole('button', { name: 'Sign in as newbie@e2e.test' }).click();
    await p.waitForURL(/\/console\/signin\?email=/);
    expect(await p.getByLabel('Email').inputValue()).toBe('newbie@e2e.test');
    await p.getByLabel('Password').fill('newbie new password');
    await p.getByRole('button', { name: 'Sign in' }).click();
    // Back on the invitation (its token kept in this tab meanwhile), signed in.
    await p.waitForURL(/\/console\/invite$/);
    await p.waitForSelector('body[data-ready="true"]');
    expect(await p.locator('#invite-join').textContent()).toBe('You are signed in as newbie@e2e.test.');
    await p.getByRole('button', { name: 'Join' }).click();
    // The joined organization's page, that organization chosen; an admin's navigation has Members.
    await p.waitForURL(/\/console\/overview\?org=org_e2e_two&welcome=1$/);
    await p.waitForSelector('body[data-ready="true"]');
    expect(await p.locator('#org-select option').allTextContents()).toEqual(expect.arrayContaining(['e2e (member)', 'e2e two (admin)']));
    expect(await p.locator('#org-select option:checked').textContent()).toBe('e2e two (admin)');
    expect(await p.locator('#welcome').textContent()).toContain('Welcome to e2e two, New Bie!');
    expect(await p.locator('#nav-members').isVisible()).toBe(true);
    await context.close();
  });

  it('signs out: the session cannot be refreshed any more', async () => {
    await open(page, '/console/projects');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/signin$/);
    await page.goto(`${stack.url}/console/keys`);
    await page.waitForURL(/\/console\/signin\?next=%2Fconsole%2Fkeys$/);
  });

  it('serves /docs without a CDN', async () => {
    const context = await newContext();
    const docs = await context.newPage();
    await docs.goto(`${stack.url}/docs`);
    await docs.waitForSelector('text=Proving service API', { timeout: 30_000 });
    await docs.screenshot({ path: join(SHOTS, '15-docs.png') });
    await context.close();
  });

  it('answers a console URL that is no page with a page that says so (404); the console API keeps its JSON', async () => {
    const context = await newContext();
    const p = await context.newPage();
    const res = await p.goto(`${stack.url}/console/no-such-page`);
    expect(res!.status()).toBe(404);
    await p.waitForSelector('body[data-ready="true"]');
    expect(await p.locator('#not-found').textContent()).toContain('There is no console page at /console/no-such-page.');
    await shot(p, '21-not-found');
    const api = await fetch(`${stack.url}/console/v1/no-such-route`);
    expect(api.headers.get('content-type')).toMatch(/^application\/json/);
    // A one-time link opened without its token says what to do.
    await open(p, '/console/set-password');
    expect(await p.locator('#status').textContent()).toBe('This link has no token: ask for a new one.');
    await shot(p, '22-set-password-no-token');
    await context.close();
  });

  it('made no request outside the stack, opened no browser dialog, and screenshotted every page at both widths', () => {
    expect(foreign).toEqual([]);
    expect(nativeDialogs).toEqual([]);
    expect(Object.keys(CONSOLE_PAGES).filter((name) => !shotPages.has(name))).toEqual([]);
  });
});
