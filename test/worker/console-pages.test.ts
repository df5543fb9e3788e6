// The console's pages and /docs: served by the Worker with a Content-Security-Policy,
// loading only the Worker's own scripts and styles (no CDN).
import { describe, expect, it } from 'vitest';
import { api } from './helpers.ts';

const PAGES = [
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

  it('redirects /console to the projects page', async () => {
    const res = await api(null, '/console', { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/console/projects');
  });
});

describe('/docs', () => {
  it('loads Scalar from this Worker, without web fonts', async () => {
    const html = await (await api(null, '/docs')).text();
    expect(html).toContain('/docs/vendor/scalar.js');
    expect(html).not.toMatch(/cdn\.jsdelivr|fonts\.scalar|https?:\/\/(?!api\.test)[a-z]/);
  });
});
