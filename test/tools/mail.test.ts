// The production mail sender (MAIL_SENDER = "http", src/features/accounts/mail.ts) against a real
// HTTP server on loopback: what it sends, and that a refusal is an error, never silence.
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inviteMessage, MailError, send } from '../../src/features/accounts/mail.ts';

const received: { headers: IncomingMessage['headers']; body: string }[] = [];
let status = 200;
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    received.push({ headers: req.headers, body });
    res
      .writeHead(status, { 'content-type': 'application/json' })
      .end(status === 200 ? '{"id":"m_1"}' : '{"message":"domain not verified"}');
  });
});
let url: string;

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/emails`;
});
afterAll(() => void server.close());

const message = inviteMessage({
  consoleUrl: 'https://console.example',
  token: 'inv_abc',
  to: 'ivy@example.com',
  orgName: 'Acme',
  role: 'member',
  invitedBy: 'alice@acme.example',
});

describe('the http mail sender', () => {
  it('POSTs the message as JSON with the bearer key', async () => {
    status = 200;
    expect(
      await send(
        { MAIL_SENDER: 'http', MAIL_API_URL: url, MAIL_API_KEY: 'key_123', MAIL_FROM: 'Console <no-reply@acme.example>' },
        message,
      ),
    ).toBe(true);
    const req = received.at(-1)!;
    expect(req.headers.authorization).toBe('Bearer key_123');
    expect(req.headers['content-type']).toBe('application/json');
    expect(JSON.parse(req.body)).toEqual({
      from: 'Console <no-reply@acme.example>',
      to: ['ivy@example.com'],
      subject: 'You are invited to Acme',
      text: message.text,
    });
    expect(message.text).toContain('https://console.example/console/invite#token=inv_abc');
  });

  it('throws when the API refuses, or when it is not fully configured; sends nothing when unset', async () => {
    status = 422;
    await expect(send({ MAIL_SENDER: 'http', MAIL_API_URL: url, MAIL_API_KEY: 'k', MAIL_FROM: 'a@b.example' }, message)).rejects.toThrow(
      /the mail API answered 422: .*domain not verified/,
    );
    await expect(send({ MAIL_SENDER: 'http', MAIL_API_URL: url, MAIL_FROM: 'a@b.example' }, message)).rejects.toBeInstanceOf(MailError);
    await expect(send({ MAIL_SENDER: 'smtp' }, message)).rejects.toThrow('MAIL_SENDER must be "outbox" or "http"');
    const before = received.length;
    expect(await send({}, message)).toBe(false);
    expect(received.length).toBe(before);
  });
});
