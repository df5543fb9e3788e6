// The console's pages and /docs: served by the Worker with a Content-Security-Policy,
// loading only the Worker's own scripts and styles (no CDN).
import { describe, expect, it } from 'vitest';
import { KEY_HEADER } from '../../src/console/ui/snippets.ts';
import { API_KEY_HEADER } from '../../src/middleware/auth.ts';
import { consoleFetch, seedUser, signIn } from './console-helpers.ts';
import { api, seedTenant } from './helpers.ts';

const PAGES = [
  'overview',
  'signin',
  'set-password',
  'invite',
  'projects',
  'projects/x',
  'programs/x',
  'proofs',
  'proofs/x',
  'keys',
  'webhooks',
  'webhooks/x',
  'members',
  'usage',
  'fleet',
  'sessions',
];

/** Every URL an HTML page would fetch by itself: src and href attributes. */
const loads = (html: string) => [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);

describe('console pages', () => {
  it.each(PAGES)('/console/%s is HTML with a strict CSP and only same-origin resources', async (page) => {
    const res = await api(null, `/console/${page}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    expect(html).toMatch(/^<!DOCTYPE html><html lang="en">/);
    expect(html).toContain('<script src="/console/static/console.js" defer');
    for (const url of loads(html)) expect(url, url).toMatch(/^\/|^#/);
    // No inline script: the CSP would block it anyway.
    expect([...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>/g)]).toEqual([]);
  });

  it('labels every form control', async () => {
    for (const page of PAGES) {
      const html = await (await api(null, `/console/${page}`)).text();
      // Controls sit inside a <label> or carry an aria-label.
      const unlabeled = [...html.matchAll(/<(input|select)\b[^>]*>/g)].filter((m) => {
        if (/aria-label=/.test(m[0]) || /type="hidden"/.test(m[0])) return false;
        const before = html.slice(0, m.index);
        return before.lastIndexOf('<label') <= before.lastIndexOf('</label>');
      });
      expect(unlabeled.map((m) => `${page}: ${m[0]}`)).toEqual([]);
    }
  });

  it('redirects /console to the overview', async () => {
    const res = await api(null, '/console', { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/console/overview');
  });

  it.each(['no-such-page', 'projects/x/y', 'static/missing.css'])(
    'answers /console/%s with the HTML not-found page (404)',
    async (path) => {
      const res = await api(null, `/console/${path}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
      const html = await res.text();
      expect(html).toContain('<body data-page="not-found" data-open="true"');
      expect(html).toContain('<title>Page not found · Proving console</title>');
    },
  );

  it('keeps the JSON 404 of the console API, signed in, and the JSON answers elsewhere', async () => {
    const t = await seedTenant();
    const owner = await signIn(await seedUser(t.orgId, 'owner'));
    const res = await consoleFetch('/console/v1/no-such-route', { token: owner.token });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: 'Not Found' });
    for (const path of ['/console/v1/no-such-route', '/v1/no-such-route', '/no-such-route']) {
      const other = await api(null, path);
      expect(other.headers.get('content-type'), path).toMatch(/^application\/json/);
    }
  });

  it('writes the public API key header the server reads in the commands it offers to copy', () => {
    expect(KEY_HEADER).toBe(API_KEY_HEADER);
  });
});

describe('/docs', () => {
  it('loads Scalar from this Worker, without web fonts', async () => {
    const html = await (await api(null, '/docs')).text();
    expect(html).toContain('/docs/vendor/scalar.js');
    expect(html).not.toMatch(/cdn\.jsdelivr|fonts\.scalar|https?:\/\/(?!api\.test)[a-z]/);
  });
});
