/**
 * The phone page (e2e v2, forward secrecy) and a service older than it (e2e v1 only) through the real
 * Node relay, in Chromium: the older service refuses the v2 hello as it does (close 4400 "unsupported e2e
 * version"), and the page says to update the computer's Remote Assistant and retries only after a long
 * wait (never stopping for good: the reason is the relay's to forge; it never falls back to v1, which a
 * relay could force). The old machine is played on the machine
 * socket with the frames an older service sends. A close 4401 ("unknown client key": pair again) is
 * the relay's to forge as well: the page says to pair again and retries slowly, never stopping for good;
 * so is a close 4403 ("address not allowed"): the page says so and retries slowly, never stopping for good.
 * Runs after `node esbuild.mjs`.
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
const REFUSING_ID = 'refusing-machine';
const FORBIDDING_ID = 'forbidding-machine';

let relay: RunningRelay;
let machine: WebSocket;
let refusing: WebSocket;
let forbidding: WebSocket;
let browser: Browser;
const hellos: Record<string, unknown>[] = [];
const refusedHellos: Record<string, unknown>[] = [];
const forbiddenHellos: Record<string, unknown>[] = [];

/** A machine socket on the relay whose `answer` closes a client after its hello (with the frames a service sends). */
async function playMachine(machineId: string, seen: Record<string, unknown>[], answer: (hello: Record<string, unknown>) => { code: number; reason: string } | undefined): Promise<WebSocket> {
  const socket = new WebSocket(`${relay.wsUrl}?machine_id=${machineId}&role=machine`, { headers: { authorization: `Bearer ${RELAY_TOKEN}` } });
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { t: string; c: string; d?: string };
    if (frame.t !== 'data' || !frame.d) return;
    const hello = JSON.parse(frame.d) as Record<string, unknown>;
    seen.push(hello);
    const close = answer(hello);
    if (close) socket.send(JSON.stringify({ t: 'close', c: frame.c, ...close }));
  });
  await new Promise((done, fail) => {
    socket.once('open', done);
    socket.once('error', fail);
  });
  return socket;
}

before(async () => {
  assert.ok(existsSync(join(MEDIA, 'chat-phone.js')), 'media/chat-phone.js is missing: run `node esbuild.mjs` first');
  relay = await startRelay(0, MEDIA);
  // What a service of e2e v1 does with a v2 hello (its parseHello's E2EError, relayed-client.ts): close 4400 with the reason.
  machine = await playMachine(MACHINE_ID, hellos, (hello) => (hello.v !== 1 ? { code: 4400, reason: 'unsupported e2e version (this service speaks v1)' } : undefined));
  // A relay (or a machine) refusing the phone's key: close 4401 "unknown client key".
  refusing = await playMachine(REFUSING_ID, refusedHellos, () => ({ code: 4401, reason: 'unknown client key' }));
  // A relay (or a LAN service whose allow_from no longer lists the phone) closing 4403.
  forbidding = await playMachine(FORBIDDING_ID, forbiddenHellos, () => ({ code: 4403, reason: 'address not allowed' }));
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  machine?.close();
  refusing?.close();
  forbidding?.close();
  await relay?.close();
});

test("a service older than the page refuses its v2 hello: the page says to update the computer's Remote Assistant and retries only after a long wait", async () => {
  const page = await browser.newPage();
  const fragment = new URLSearchParams({ relay: `${relay.wsUrl}?machine_id=${MACHINE_ID}`, machine_key: generateKeyPair().publicKey, pair: 'one-time-secret-0123456789', name: 'Old desk' });
  await page.goto(`${relay.httpUrl}/#${fragment.toString()}`);
  await page.waitForFunction(() => /older than this page.*retrying in \d+ s/.test(document.body.textContent ?? ''), undefined, { timeout: 15_000 });
  assert.equal(hellos.length, 1, 'one hello: the next waits minutes (REFUSED_RETRY_MS), not the usual backoff');
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

test('a close 4401 "unknown client key" (which a relay can forge) says to pair again and retries only after a long wait, never stopping for good', async () => {
  const page = await browser.newPage();
  // A phone paired with this machine before (its pairing kept in localStorage).
  const stored = {
    machines: [{ name: 'Refusing desk', pairing: { url: `${relay.wsUrl}?machine_id=${REFUSING_ID}`, token: 'device-token-0123456789', relay: { machineKey: generateKeyPair().publicKey } } }],
  };
  await page.addInitScript((list) => localStorage.getItem('remote-assistant.machines') ?? localStorage.setItem('remote-assistant.machines', list), JSON.stringify(stored));
  await page.goto(`${relay.httpUrl}/`);
  await page.waitForFunction(() => /not paired with the computer.*retrying in \d+ s/.test(document.body.textContent ?? ''), undefined, { timeout: 15_000 });
  assert.equal(refusedHellos.length, 1, 'one hello: the next waits minutes (REFUSED_RETRY_MS), not the usual backoff');
  // Back online (or shown again), it tries at once: a lying relay's 4401 ends no pairing.
  await page.evaluate(() => window.dispatchEvent(new Event('online')));
  await waitFor(() => refusedHellos.length >= 2, 'a second hello after the network came back', 10_000);
  await page.close();
});

test('a close 4403 "address not allowed" (which a relay can forge) says so and retries only after a long wait, never stopping for good', async () => {
  const page = await browser.newPage();
  const stored = {
    machines: [{ name: 'Forbidding desk', pairing: { url: `${relay.wsUrl}?machine_id=${FORBIDDING_ID}`, token: 'device-token-0123456789', relay: { machineKey: generateKeyPair().publicKey } } }],
  };
  await page.addInitScript((list) => localStorage.getItem('remote-assistant.machines') ?? localStorage.setItem('remote-assistant.machines', list), JSON.stringify(stored));
  await page.goto(`${relay.httpUrl}/`);
  await page.waitForFunction(() => /not allowed to connect.*retrying in \d+ s/.test(document.body.textContent ?? ''), undefined, { timeout: 15_000 });
  assert.equal(forbiddenHellos.length, 1, 'one hello: the next waits minutes (REFUSED_RETRY_MS), not the usual backoff');
  // Back online (or shown again), it tries at once: a lying relay's 4403 stops nothing for good, and a
  // LAN service that allows the address again is reached without reloading the page.
  await page.evaluate(() => window.dispatchEvent(new Event('online')));
  await waitFor(() => forbiddenHellos.length >= 2, 'a second hello after the network came back', 10_000);
  await page.close();
});
