// Pairing a phone without the editor (README, "Pair a phone"), through the real command line (dist/cli.js,
// `npm run build` first): `serve` prints a pairing link while no device is paired, `pair` prints a fresh
// one from the running service, and the links pair for real (opened in Chromium, or spent over a socket).
// The access token never shows in stdout or the log: the link carries a one-time secret.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import type { Browser } from 'playwright-core';
import { pairingHostFor } from '../../src/transport/pairing/lan-pairing';
import { pairingText } from '../../src/cli-pair';
import { runCli, serve, type ServeProcess } from '../helpers/cli';
import { launchChromium } from '../helpers/browser';
import { TEST_TOKEN, writeConfig } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

let browser: Browser;
before(async () => void (browser = await launchChromium()));
after(() => browser?.close());

const LINK = /http:\/\/\S+\/#url=\S+/;

async function newDataDir(t: TestContext): Promise<string> {
  const temp = await tempDir('ra-pairing-');
  t.after(temp.cleanup);
  await writeConfig(temp.dir, {});
  return temp.dir;
}

async function stop(proc: ServeProcess): Promise<void> {
  proc.child.kill('SIGTERM');
  await proc.exited;
}

/** The one-time secret the link carries, checked against the service's own address. */
function secretOf(link: string, port: number): string {
  const url = new URL(link);
  assert.equal(url.origin, `http://127.0.0.1:${port}`);
  const fragment = new URLSearchParams(url.hash.slice(1));
  assert.equal(fragment.get('url'), `ws://127.0.0.1:${port}/ws`);
  const secret = fragment.get('pair');
  assert.ok(secret && secret !== TEST_TOKEN);
  return secret;
}

async function devices(port: number): Promise<unknown[]> {
  const owner = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, TEST_TOKEN);
  try {
    return ((await owner.request({ type: 'list_devices' })).data as { devices: unknown[] }).devices;
  } finally {
    owner.close();
  }
}

test('serve prints a pairing link while no device is paired; opened on a phone it pairs it; then serve prints none', async (t) => {
  const dir = await newDataDir(t);
  const first = await serve(dir);
  let link: string;
  try {
    link = (await waitFor(() => LINK.exec(first.output()), 'the pairing link in serve output', 10_000))[0];
    secretOf(link, first.port);
    assert.ok(!/[█▀▄]/.test(first.output()), 'no QR code when stdout is not a terminal');
    const context = await browser.newContext({ isMobile: true, hasTouch: true });
    t.after(() => context.close());
    const page = await context.newPage();
    await page.goto(link);
    await waitFor(async () => (await devices(first.port)).length === 1 || undefined, 'the phone paired through the link', 15_000);
    assert.ok(!first.output().includes(TEST_TOKEN), 'no access token in stdout/stderr');
  } finally {
    await stop(first);
  }
  assert.ok(!(await readFile(join(dir, 'service.log'), 'utf8')).includes(TEST_TOKEN), 'no access token in the log');
  const second = await serve(dir);
  try {
    await waitFor(() => /1 device\(s\) paired; `remote-assistant pair` prints a link/.test(second.output()) || undefined, 'the paired note', 10_000);
    assert.equal(LINK.test(second.output()), false, 'a paired machine prints no link');
  } finally {
    await stop(second);
  }
});

test('pair prints a fresh working link from the running service; create_lan_pairing answers the same kind of link', async (t) => {
  const dir = await newDataDir(t);
  const proc = await serve(dir);
  try {
    const printedByServe = (await waitFor(() => LINK.exec(proc.output()), 'the pairing link in serve output', 10_000))[0];
    const pair = await runCli(['pair', '--data-dir', dir]);
    assert.equal(pair.code, 0, pair.stderr);
    assert.ok(!pair.stdout.includes(TEST_TOKEN) && !pair.stderr.includes(TEST_TOKEN));
    const link = LINK.exec(pair.stdout)?.[0];
    assert.ok(link && link !== printedByServe, pair.stdout);
    const phone = await TestClient.connect(`ws://127.0.0.1:${proc.port}/ws`);
    t.after(() => phone.close());
    const hello = await phone.request({ type: 'auth', pairing_secret: secretOf(link, proc.port), device_id: 'cli-phone', device_name: 'Pixel' });
    assert.equal(hello.status, 'ok', JSON.stringify(hello));

    const owner = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
    t.after(() => owner.close());
    const answer = (await owner.request({ type: 'create_lan_pairing' })).data as { pairing_secret: string; link: string };
    assert.equal(secretOf(answer.link, proc.port), answer.pairing_secret);
  } finally {
    await stop(proc);
  }
  assert.ok(!(await readFile(join(dir, 'service.log'), 'utf8')).includes(TEST_TOKEN), 'no access token in the log');
});

test('the unpaired page names the real ways to pair and fills in its own address', async (t) => {
  const dir = await newDataDir(t);
  const proc = await serve(dir);
  try {
    const context = await browser.newContext();
    t.after(() => context.close());
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${proc.port}/`);
    await page.waitForSelector('#pair-url');
    assert.equal(await page.inputValue('#pair-url'), `ws://127.0.0.1:${proc.port}/ws`);
    const text = (await page.textContent('.pairing-form')) ?? '';
    assert.match(text, /remote-assistant pair/);
    assert.match(text, /Show Connection Info/);
    assert.ok(!text.includes('Pair a Phone'), 'no palette command that does not exist');
  } finally {
    await stop(proc);
  }
});

test("serve --public-host names the address the phone reaches (a container's published port); a bad one is refused", async (t) => {
  const dir = await newDataDir(t);
  const proc = await serve(dir, 0, {}, ['--public-host', '192.0.2.7']);
  try {
    const link = new URL((await waitFor(() => LINK.exec(proc.output()), 'the pairing link in serve output', 10_000))[0]);
    assert.equal(link.origin, `http://192.0.2.7:${proc.port}`);
    assert.equal(new URLSearchParams(link.hash.slice(1)).get('url'), `ws://192.0.2.7:${proc.port}/ws`);
  } finally {
    await stop(proc);
  }
  const bad = await runCli(['serve', '--data-dir', dir, '--port', '0', '--public-host', 'evil.example/#pair=x']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /invalid --public-host/);
});

test('pair without a running service says so and fails', async (t) => {
  const dir = await newDataDir(t);
  const pair = await runCli(['pair', '--data-dir', dir, '--port', '1']);
  assert.notEqual(pair.code, 0);
  assert.match(pair.stderr, /no service could be reached/);
});

test('on a terminal the link comes with a QR code of it', async () => {
  const text = await pairingText({ link: 'http://127.0.0.1:1/#pair=x', expires_in: 600 }, true);
  assert.match(text, /within 10 minutes\): http:\/\/127\.0\.0\.1:1\/#pair=x\n/);
  assert.match(text, /[█▀▄]/);
});

test('a link names loopback for a loopback-only service, else an address of this machine', () => {
  assert.equal(pairingHostFor('127.0.0.1'), '127.0.0.1');
  assert.equal(pairingHostFor('::1'), '127.0.0.1');
  assert.equal(pairingHostFor('192.168.1.20'), '192.168.1.20');
  assert.notEqual(pairingHostFor('::'), '::');
});
