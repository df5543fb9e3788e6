import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';

describe('worker', () => {
  it('answers healthz', async () => {
    const res = await exports.default.fetch('https://api.test/healthz');
    expect(res.status).toBe(200);
  });
});
