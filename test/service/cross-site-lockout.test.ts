/**
 * A web site the person visits cannot lock them out of their own service. Browsers let any page open a
 * WebSocket to ws://127.0.0.1:<port>/ws (or a LAN address) and send frames: a page of another origin
 * (here a real Chromium on a page served from another port) sends wrong tokens. Before, its failures
 * counted against 127.0.0.1 itself, so after ten the other editor windows (which attach over loopback),
 * the CLI and any script were refused, even with the right token, for as long as the page kept trying.
 * Now a socket a browser opened (it carries `Origin`) counts its failures apart: under its origin when
 * that origin has signed in here before, else with every other new origin of that address.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import WebSocket from 'ws';
import { launchChromium } from '../helpers/browser';
import { startService, type RunningService } from '../helpers/service';
import { MAX_SIGNED_IN_ORIGINS, originOf, SignedInOrigins } from '../../src/transport/auth/browser-origins';
import { LOGIN_FAILURE_LIMIT, LoginFailures, WEB_FAILURE_LIMIT } from '../../src/transport/auth/login-failures';
import type { Logger } from '../../src/log/logger';

let svc: RunningService;
let browser: Browser;
let site: http.Server;
let siteUrl: string;

/** A site of its own origin: any page, as far as the service can tell. */
function startSite(): Promise<string> {
  site = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>some site</title>'));
  return new Promise((resolve) => site.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(site.address() as AddressInfo).port}/`)));
}

before(async () => {
  svc = await startService();
  siteUrl = await startSite();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => site?.close(resolve));
  await svc?.dispose();
});

/** One socket's `auth` (optionally as a browser would send it, with `Origin`): the answer's code ('ok' on success), or how it was refused. */
function login(token: string, origin?: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = new WebSocket(svc.wsUrl, origin ? { origin } : {});
    socket.on('unexpected-response', (_req, res) => resolve(`http ${res.statusCode}`));
    socket.on('open', () => socket.send(JSON.stringify({ type: 'auth', token })));
    socket.on('message', (data) => {
      resolve((JSON.parse(data.toString()) as { code?: string }).code ?? 'ok');
      socket.close();
    });
    socket.on('close', () => resolve('closed unread'));
    socket.on('error', () => resolve('closed unread'));
  });
}

/** The page of another site sends `count` wrong tokens to the service, one socket each, one after another. */
async function pageGuesses(count: number): Promise<string[]> {
  const page = await browser.newPage();
  await page.goto(siteUrl);
  const answers = await page.evaluate(
    async ({ url, count }) => {
      const out: string[] = [];
      for (let i = 0; i < count; i++) {
        out.push(
          await new Promise<string>((resolve) => {
            // The page's own WebSocket (this file's `WebSocket` is Node's ws, which tsx would name here).
            const socket = new (globalThis as unknown as { WebSocket: typeof globalThis.WebSocket }).WebSocket(url);
            socket.onopen = () => socket.send(JSON.stringify({ type: 'auth', token: `guess-${i}-0123456789abcdef0123456789` }));
            socket.onmessage = (event) => resolve(String((JSON.parse(String(event.data)) as { code?: string }).code));
            socket.onclose = () => resolve('closed');
          }),
        );
      }
      return out;
    },
    { url: svc.wsUrl, count },
  );
  await page.close();
  return answers;
}

test("another site's page guessing tokens locks out neither the loopback clients nor a page that signed in before; only new browser origins wait", async () => {
  const phonePage = `http://127.0.0.1:${new URL(svc.httpUrl).port}`;
  assert.equal(await login(svc.token, phonePage), 'ok', 'the phone page (served by the service) signs in before the attack');

  const answers = await pageGuesses(12);
  assert.deepEqual(answers.slice(0, 10), Array(10).fill('invalid_token'), 'the page really reaches the service: its guesses are checked and refused');
  // The person's own clients on this machine, right token: an editor window attaching, the CLI, a script.
  assert.equal(await login(svc.token), 'ok', 'a loopback client without Origin is not locked out by the page');
  assert.deepEqual(answers.slice(10), ['rate_limited', 'rate_limited'], 'and then it is limited (answered, not cut off: its address is not locked)');

  assert.equal(await login(svc.token, phonePage), 'ok', 'nor the phone page, which signed in here before');
  // What the page's failures did lock: browser origins this service has not seen sign in.
  assert.equal(await login(svc.token, 'http://never-seen.example'), 'rate_limited');
});

test('remembered origins: only those that signed in, at most 32 (the oldest forgotten), never the opaque `null`', () => {
  const origins = new SignedInOrigins();
  assert.equal(origins.limitKey('10.0.0.7', undefined), '10.0.0.7', 'not a browser: its address');
  const bucket = (address: string, origin: string) => (origins.limitKey(address, origin) as { bucket: string }).bucket;
  assert.equal(bucket('10.0.0.7', 'http://10.0.0.5:5000'), 'web 10.0.0.7', 'a new origin: with the other new ones');
  origins.signedIn('null');
  assert.equal(bucket('10.0.0.7', 'null'), 'web 10.0.0.7', 'a sandboxed frame or a file never gets a count of its own');
  for (let i = 0; i <= MAX_SIGNED_IN_ORIGINS; i++) origins.signedIn(`http://10.0.0.${i}:5000`);
  assert.equal(bucket('10.0.0.7', 'http://10.0.0.0:5000'), 'web 10.0.0.7', 'the oldest was forgotten');
  assert.equal(bucket('10.0.0.7', 'http://10.0.0.1:5000'), 'web http://10.0.0.1:5000 10.0.0.7');
  assert.equal(bucket('2001:db8:1:2:3:4:5:6', 'http://10.0.0.1:5000'), 'web http://10.0.0.1:5000 2001:db8:1:2::/64', 'an IPv6 address by its /64');
  assert.equal(originOf(['http://A.example', 'http://b']), 'http://a.example,http://b');
});

test('a script sending made-up and remembered Origins from one address is checked at most 3 x the limit in all; its clients without Origin still get in', () => {
  const quiet = { child: () => quiet, debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;
  const failures = new LoginFailures(quiet);
  const origins = new SignedInOrigins();
  // Pages that signed in here before: a script knows their origins and can send them.
  const remembered = Array.from({ length: 5 }, (_, i) => `http://10.0.0.${i}:5000`);
  for (const origin of remembered) origins.signedIn(origin);
  let checked = 0;
  for (const origin of [...remembered, 'http://made-up.example', 'http://another.example']) {
    for (let i = 0; i < LOGIN_FAILURE_LIMIT + 2; i++) {
      const attempt = failures.begin(origins.limitKey('10.0.0.66', origin), 'token');
      if (attempt.retryAfterSeconds > 0) continue;
      checked += 1;
      attempt.failed();
    }
  }
  assert.equal(checked, WEB_FAILURE_LIMIT, 'every browser bucket of the address together');
  assert.equal(failures.refusesConnection('10.0.0.66'), false, 'the address itself is not locked out');
  const editor = failures.begin(origins.limitKey('10.0.0.66', undefined), 'token');
  assert.equal(editor.retryAfterSeconds, 0, 'a client without Origin is checked');
  editor.refund();
  failures.flush();
});
