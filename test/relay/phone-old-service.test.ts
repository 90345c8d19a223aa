/**
 * The phone page (e2e v2, forward secrecy) and a service older than it (e2e v1 only) through the real
 * Node relay, in Chromium: the older service refuses the v2 hello as it does (close 4400 "unsupported e2e
 * version"), and the page says to update the computer's Remote Assistant and retries only after a long
 * wait (never stopping for good: the reason is the relay's to forge; it never falls back to v1, which a
 * relay could force). The old machine is played on the machine
 * socket with the frames an older service sends. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import WebSocket from 'ws';
import { generateKeyPair } from '../../src/tunnel';
import { launchChromium } from '../helpers/browser';
import { waitFor } from '../helpers/temp';
import { RELAY_TOKEN, startRelay, type RunningRelay } from '../helpers/relay-link-harness';

const MEDIA = resolve('media');
const MACHINE_ID = 'old-service-machine';

let relay: RunningRelay;
let machine: WebSocket;
let browser: Browser;
const hellos: Record<string, unknown>[] = [];

before(async () => {
  assert.ok(existsSync(join(MEDIA, 'chat-phone.js')), 'media/chat-phone.js is missing: run `node esbuild.mjs` first');
  relay = await startRelay(0, MEDIA);
  machine = new WebSocket(`${relay.wsUrl}?machine_id=${MACHINE_ID}&role=machine`, { headers: { authorization: `Bearer ${RELAY_TOKEN}` } });
  // What a service of e2e v1 does with a v2 hello (its parseHello's E2EError, relayed-client.ts): close 4400 with the reason.
  machine.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { t: string; c: string; d?: string };
    if (frame.t !== 'data' || !frame.d) return;
    const hello = JSON.parse(frame.d) as Record<string, unknown>;
    hellos.push(hello);
    if (hello.v !== 1) machine.send(JSON.stringify({ t: 'close', c: frame.c, code: 4400, reason: 'unsupported e2e version (this service speaks v1)' }));
  });
  await new Promise((done, fail) => {
    machine.once('open', done);
    machine.once('error', fail);
  });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  machine?.close();
  await relay?.close();
});

test("a service older than the page refuses its v2 hello: the page says to update the computer's Remote Assistant and retries only after a long wait", async () => {
  const page = await browser.newPage();
  const fragment = new URLSearchParams({ relay: `${relay.wsUrl}?machine_id=${MACHINE_ID}`, machine_key: generateKeyPair().publicKey, pair: 'one-time-secret-0123456789', name: 'Old desk' });
  await page.goto(`${relay.httpUrl}/#${fragment.toString()}`);
  await page.waitForFunction(() => /older than this page.*retrying in \d+ s/.test(document.body.textContent ?? ''), undefined, { timeout: 15_000 });
  assert.equal(hellos.length, 1, 'one hello: the next waits minutes (OLDER_SERVICE_RETRY_MS), not the usual backoff');
  assert.equal(hellos[0].v, 2, 'the page speaks v2');
  assert.equal(typeof hellos[0].eph, 'string', 'with its ephemeral key');
  // The close reason is the relay's to forge ("update your Remote Assistant" from a lying relay): the page
  // never stops for good on it. Back online (or shown again), it tries at once, in v2 again.
  await page.locator('.connection[data-state="closed"]').first().waitFor();
  await page.evaluate(() => window.dispatchEvent(new Event('online')));
  await waitFor(() => hellos.length >= 2, 'a second hello after the network came back', 10_000);
  assert.equal(hellos[1].v, 2, 'no fallback to v1');
  await page.close();
});
