/**
 * "Add a computer" from any machine's page (issue 23, "Several machines on the LAN"): two real services
 * on 127.0.0.1 (different ports), each serving the phone page itself as on a LAN; Debian's chromium opens
 * A's own pairing link, so the page is A's (http://127.0.0.1:<A>/), and adds B from B's pairing link,
 * pasted, or read from a PNG of B's QR code given to the photo input (`capture`: the phone's camera on a
 * plain-http page). Then it chats on B (B's service has the message, A's has not) and switches back to A.
 * A spent, bogus or malformed link says so and changes nothing the page keeps. Where the page may use the
 * camera stream (a secure context: loopback here), the live camera reads the code too (Chromium's fake
 * camera playing a video of B's QR code). Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import QRCode from 'qrcode';
import { launchChromium } from '../helpers/browser';
import { tempDir } from '../helpers/temp';
import { useFakeProvider, type ServiceWithFake } from '../helpers/service-fixture';

const MEDIA = resolve('media');
const WAIT = 15_000;
const SHOWN = '.machine-view:not([hidden])';

const rig = useFakeProvider();
let a: ServiceWithFake;
let b: ServiceWithFake;
let browser: Browser;

before(async () => {
  assert.ok(existsSync(resolve(MEDIA, 'qr-decode.js')), 'media/qr-decode.js is missing: run `node esbuild.mjs` first');
  [a, b] = await Promise.all([rig.start({ model: 'fake-model' }, { mediaDir: MEDIA }), rig.start({ model: 'fake-model' }, { mediaDir: MEDIA })]);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
});

/** A fresh pairing link of the machine, as `remote-assistant pair` prints it. */
async function pairingLink(svc: ServiceWithFake): Promise<string> {
  const owner = await svc.client();
  const answer = await owner.request({ type: 'create_lan_pairing' });
  assert.equal(answer.status, 'ok');
  return (answer.data as { link: string }).link;
}

const lanId = (svc: ServiceWithFake) => `lan:${svc.wsUrl}`;

interface Phone {
  context: BrowserContext;
  page: Page;
  errors: string[];
  /** Paths the page fetched from its own machine (A). */
  fetched: string[];
}

/** A phone that opened A's own pairing link: A's page, knowing A alone. */
async function phoneOnA(): Promise<Phone> {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const errors: string[] = [];
  const fetched: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('request', (request) => {
    if (request.url().startsWith(a.httpUrl)) fetched.push(new URL(request.url()).pathname);
  });
  await page.goto(await pairingLink(a));
  await page.locator(`.machine-view[data-machine-id="${lanId(a)}"] .connection[data-state="open"]`).waitFor();
  assert.ok(page.url().startsWith(`${a.httpUrl}/`), "the page is A's own");
  return { context, page, errors, fetched };
}

async function openAddSheet(page: Page): Promise<void> {
  if (await page.locator('.machines-panel').isHidden()) await page.locator(`${SHOWN} .machine-switch`).click();
  if ((await page.locator('.add-machine-toggle').getAttribute('aria-expanded')) !== 'true') await page.locator('.add-machine-toggle').click();
  await page.locator('#ra-add-link').waitFor();
}

async function paste(page: Page, link: string): Promise<void> {
  await openAddSheet(page);
  await page.locator('#ra-add-link').fill(link);
  await page.locator('.add-machine-submit').click();
}

/** What the page keeps: its machines and their credentials. */
function kept(page: Page): Promise<{ machines: { id: string; name: string; pairing: { token: string; pair?: string } }[]; current?: string }> {
  return page.evaluate(() => JSON.parse(localStorage.getItem('remote-assistant.machines') ?? 'null'));
}

/** The machine on screen chats; its own service has the conversation and the other has not. */
async function chatOnShown(page: Page, on: ServiceWithFake, other: ServiceWithFake, text: string): Promise<void> {
  const input = page.locator(`${SHOWN} .composer-input`);
  await input.fill(text);
  await input.press('Enter');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: `echo: ${text}` }).waitFor();
  const titles = async (svc: ServiceWithFake) =>
    ((await (await svc.client()).request({ type: 'list_conversations' })).data as { conversations: { title: string }[] }).conversations.map((c) => c.title);
  assert.ok((await titles(on)).includes(text), 'the machine on screen has the message');
  assert.ok(!(await titles(other)).includes(text), 'the other machine has not');
}

async function switchTo(page: Page, svc: ServiceWithFake): Promise<void> {
  await page.locator(`${SHOWN} .machine-switch`).click();
  await page.locator(`.machines-panel .machine[data-machine-id="${lanId(svc)}"] .machine-select`).click();
  await page.locator(`.machine-view[data-machine-id="${lanId(svc)}"]`).waitFor({ state: 'visible' });
}

test("A's page adds B from B's pasted pairing link, chats on B and switches back to A; the spent link then changes nothing", async () => {
  const phone = await phoneOnA();
  const { page } = phone;
  const link = await pairingLink(b);
  await paste(page, link);
  await page.locator(`${SHOWN}[data-machine-id="${lanId(b)}"] .connection[data-state="open"]`).waitFor();
  assert.ok(await page.locator('.machines-panel').isHidden(), 'the switcher closed on the new machine');

  const after = await kept(page);
  assert.deepEqual(after.machines.map((m) => m.id).sort(), [lanId(a), lanId(b)].sort(), 'A and B kept');
  assert.equal(after.current, lanId(b));
  for (const m of after.machines) assert.ok(m.pairing.token && !m.pairing.pair, 'each with its own device credential, no secret left');
  const devices = ((await (await b.client()).request({ type: 'list_devices' })).data as { devices: unknown[] }).devices;
  assert.equal(devices.length, 1, 'B paired this phone once (the trial connection spent the secret; the view reused the credential)');

  await chatOnShown(page, b, a, 'hello B from A’s page');
  await switchTo(page, a);
  await chatOnShown(page, a, b, 'and back on A');
  assert.equal(await page.locator(`.machine-view[data-machine-id="${lanId(b)}"] .connection`).getAttribute('data-state'), 'open', 'B stays connected behind A');

  // The same link again (on a small phone): its secret was spent. Said where it is seen, and nothing kept changes.
  await page.setViewportSize({ width: 320, height: 568 });
  await paste(page, link);
  const refused = page.locator('.add-machine-status[data-kind="error"]', { hasText: 'refused this pairing link' });
  await refused.waitFor();
  const said = (await refused.boundingBox())!;
  assert.ok(said.y >= 0 && said.y + said.height <= 568, `the message is on screen at 320x568 (${JSON.stringify(said)})`);
  assert.doesNotMatch(await page.locator('.add-machine').innerText(), /`/, 'no markdown backticks shown as text');
  assert.deepEqual(await kept(page), { ...after, current: lanId(a) }, 'a spent link changes nothing');
  assert.ok(await page.locator(`${SHOWN}[data-machine-id="${lanId(a)}"]`).isVisible(), 'A stays on screen');

  // A link whose secret the machine never gave, and text that is no link at all.
  await page.locator('#ra-add-link').fill(link.replace(/pair=[^&]+/, 'pair=not-a-secret'));
  await page.locator('.add-machine-submit').click();
  await page.locator('.add-machine-status[data-kind="error"]', { hasText: 'refused this pairing link' }).waitFor();
  await page.locator('#ra-add-link').fill('my computer');
  await page.locator('.add-machine-submit').click();
  await page.locator('.add-machine-status[data-kind="error"]', { hasText: 'not a pairing link' }).waitFor();
  assert.deepEqual(await kept(page), { ...after, current: lanId(a) }, 'a bad link changes nothing');
  assert.ok(!phone.fetched.includes('/qr-decode.js'), 'the QR decoder is loaded only for a picture');
  assert.deepEqual(phone.errors, []);
  await phone.context.close();
});

test("A's page adds B from a photo of B's QR code (the file input the phone's camera fills), chats on B and switches back", async () => {
  const phone = await phoneOnA();
  const { page } = phone;
  const png = await QRCode.toBuffer(await pairingLink(b), { type: 'png', scale: 6, margin: 4 });
  await openAddSheet(page);
  const photo = page.locator('.add-machine-photo');
  assert.equal(await photo.getAttribute('capture'), 'environment', 'opens the camera on a phone');
  assert.equal(await photo.getAttribute('accept'), 'image/*');
  await photo.setInputFiles({ name: 'qr.png', mimeType: 'image/png', buffer: png });
  await page.locator(`${SHOWN}[data-machine-id="${lanId(b)}"] .connection[data-state="open"]`).waitFor();
  assert.ok(phone.fetched.includes('/qr-decode.js'), "the decoder came from A's service (Linux chromium has no BarcodeDetector)");
  const stored = await kept(page);
  assert.deepEqual(stored.machines.map((m) => m.id).sort(), [lanId(a), lanId(b)].sort());
  await chatOnShown(page, b, a, 'scanned B');
  await switchTo(page, a);
  await chatOnShown(page, a, b, 'A again after the scan');

  // A picture without a QR code: said, nothing changes.
  await openAddSheet(page);
  const blank = await QRCode.toBuffer('x', { type: 'png', scale: 1, margin: 0, color: { dark: '#ffffffff', light: '#ffffffff' } });
  await photo.setInputFiles({ name: 'blank.png', mimeType: 'image/png', buffer: blank });
  await page.locator('.add-machine-status[data-kind="error"]', { hasText: 'No QR code could be read' }).waitFor();
  assert.deepEqual((await kept(page)).machines.length, 2);
  assert.deepEqual(phone.errors, []);
  await phone.context.close();
});

/**
 * A few seconds of video showing the QR code of `text`, as Chromium's fake camera plays it: Y4M, 4:2:0,
 * the code's modules drawn black on white in the luma plane, the chroma planes grey.
 */
function qrVideo(text: string): Buffer {
  const modules = QRCode.create(text, { errorCorrectionLevel: 'M' }).modules;
  const width = 640;
  const height = 480;
  const scale = Math.floor(Math.min(width, height) / (modules.size + 8));
  const left = Math.floor((width - modules.size * scale) / 2);
  const top = Math.floor((height - modules.size * scale) / 2);
  const luma = Buffer.alloc(width * height, 235);
  for (let y = 0; y < modules.size * scale; y++) for (let x = 0; x < modules.size * scale; x++) if (modules.get(Math.floor(y / scale), Math.floor(x / scale))) luma[(top + y) * width + left + x] = 16;
  const chroma = Buffer.alloc((width / 2) * (height / 2) * 2, 128);
  const frame = Buffer.concat([Buffer.from('FRAME\n'), luma, chroma]);
  return Buffer.concat([Buffer.from(`YUV4MPEG2 W${width} H${height} F10:1 Ip A1:1 C420jpeg\n`), ...Array.from({ length: 10 }, () => frame)]);
}

test("on a secure page (loopback), A's page adds B with the live camera pointed at B's QR code", async () => {
  const video = await tempDir('ra-camera-');
  const camera = await launchChromium(['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-video-capture=${join(video.dir, 'qr.y4m')}`]);
  try {
    await writeFile(join(video.dir, 'qr.y4m'), qrVideo(await pairingLink(b)));
    const context = await camera.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    await context.grantPermissions(['camera'], { origin: a.httpUrl });
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT);
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(await pairingLink(a));
    await page.locator(`.machine-view[data-machine-id="${lanId(a)}"] .connection[data-state="open"]`).waitFor();
    await openAddSheet(page);
    await page.locator('.add-machine-camera').click();
    await page.locator(`${SHOWN}[data-machine-id="${lanId(b)}"] .connection[data-state="open"]`).waitFor();
    assert.deepEqual((await kept(page)).machines.map((m) => m.id).sort(), [lanId(a), lanId(b)].sort());
    assert.equal(await page.evaluate(() => document.querySelector('video')?.srcObject ?? null), null, 'the camera is stopped once the code is read');
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await camera.close();
    await video.cleanup();
  }
});

/** The link with its `name=` replaced (a QR code or pasted text an attacker wrote). */
function named(link: string, name: string): string {
  const url = new URL(link);
  const fragment = new URLSearchParams(url.hash.slice(1));
  fragment.set('name', name);
  url.hash = fragment.toString();
  return url.toString();
}

test("attack: a pairing link's name= carries no bidi control or line break onto the page, and cannot pass for a machine already listed", async () => {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  // A's own link, its name with a right-to-left override and a line break: shown as "work-laptop\nexe.gnp" would read otherwise.
  await page.goto(named(await pairingLink(a), 'work-\u202Epotpal\n'));
  await page.locator(`.machine-view[data-machine-id="${lanId(a)}"] .connection[data-state="open"]`).waitFor();
  const aName = (await kept(page)).machines[0].name;
  assert.doesNotMatch(aName, /[\u0000-\u001f\u202a-\u202e\u2066-\u2069]/, `the name is kept without hidden characters (${JSON.stringify(aName)})`);

  // B's link names itself as A's name with a zero-width space: the same on screen, a different computer.
  await paste(page, named(await pairingLink(b), `${aName}\u200b`));
  await page.locator(`${SHOWN}[data-machine-id="${lanId(b)}"] .connection[data-state="open"]`).waitFor();
  const machines = (await kept(page)).machines;
  const reads = (name: string) => name.normalize('NFKC').replace(/[\u00ad\u034f\u180e\u200b-\u200f\u2060-\u2064\ufeff]/g, '');
  const bName = machines.find((m) => m.id === lanId(b))!.name;
  assert.notEqual(reads(bName), reads(aName), `B (${JSON.stringify(bName)}) does not read as A (${JSON.stringify(aName)})`);
  await page.locator(`${SHOWN} .machine-switch`).click();
  const shown = await page.locator('.machines-panel .machine-name').allInnerTexts();
  assert.equal(new Set(shown.map(reads)).size, 2, `the switcher shows two different names (${JSON.stringify(shown)})`);
  assert.deepEqual(errors, []);
  await context.close();
});

test("attack: a reply's link carrying a pairing fragment (a prompt-injected model, a webhook's text) neither wipes this phone's credential nor adds a machine", async () => {
  const phone = await phoneOnA();
  const { page, context } = phone;
  const before = await kept(page);
  // `#token=` alone names the page's own socket: opened, it replaced A's device credential with a bogus one.
  // `#url=` names another service: opened, it added that machine (and showed it) without a question.
  const bogus = '#token=bogus';
  const elsewhere = `#url=${encodeURIComponent(b.wsUrl)}&token=bogus&name=work-laptop`;
  rig.fake.script({ text: `Read [the notes](${bogus}), [the log](${a.httpUrl}/${bogus}) and [the other computer](${elsewhere}).` });
  const input = page.locator(`${SHOWN} .composer-input`);
  await input.fill('where are the notes?');
  await input.press('Enter');
  await page.locator(`${SHOWN} .message.assistant`, { hasText: 'Read the notes' }).waitFor();
  const links = page.locator(`${SHOWN} .message.assistant a[href]`);
  for (let i = 0; i < (await links.count()); i += 1) {
    const [opened] = await Promise.all([context.waitForEvent('page'), links.nth(i).click()]);
    await opened.waitForLoadState('load');
    await opened.locator('.machine-view:not([hidden]), .pairing-form').first().waitFor();
    await opened.close();
  }
  assert.deepEqual(await kept(page), before, 'the machines and their credentials are as they were');
  assert.deepEqual(phone.errors, []);
  await context.close();
});

test('attack: a link opened into the page (a planted QR code) for a machine this phone holds a credential for replaces it only once the machine accepted it', async () => {
  const phone = await phoneOnA();
  const { page } = phone;
  const before = await kept(page);
  // A bogus token, then a spent pairing secret: before, either replaced A's working device credential.
  for (const fragment of ['#token=bogus', new URL(await pairingLink(a)).hash.replace(/pair=[^&]+/, 'pair=spent-or-made-up')]) {
    await page.evaluate((hash) => (location.hash = hash), fragment);
    await page.locator('.add-machine-status[data-kind="error"]', { hasText: 'refused this pairing link' }).waitFor();
    assert.deepEqual(await kept(page), before, `${fragment.slice(0, 12)}… changed nothing kept`);
    assert.equal(await page.locator(`${SHOWN}[data-machine-id="${lanId(a)}"] .connection`).getAttribute('data-state'), 'open', 'A stays connected');
    await page.locator('.machines-close').click();
  }
  // A fresh link of A's: accepted, it renews A's pairing (a new device credential), still one machine.
  await page.evaluate((hash) => (location.hash = hash), new URL(await pairingLink(a)).hash);
  await page.waitForFunction((old) => JSON.parse(localStorage.getItem('remote-assistant.machines') ?? '{}').machines?.[0]?.pairing?.token !== old, before.machines[0].pairing.token);
  const after = await kept(page);
  assert.deepEqual(
    after.machines.map((m) => m.id),
    [lanId(a)],
  );
  assert.ok(after.machines[0].pairing.token && !after.machines[0].pairing.pair, 'a new credential, no secret left');
  await page.locator(`${SHOWN}[data-machine-id="${lanId(a)}"] .connection[data-state="open"]`).waitFor();
  assert.deepEqual(phone.errors, []);
  await phone.context.close();
});

test('attack: a pairing link for a machine this phone does not know, opened from outside the page (a camera app, a link in a message), adds nothing unless the person agrees, naming it, and the machine accepts the link', async () => {
  const phone = await phoneOnA();
  const { page } = phone;
  const before = await kept(page);
  const asked: string[] = [];
  let agree = false;
  page.on('dialog', (dialog) => {
    asked.push(dialog.message());
    void (agree ? dialog.accept() : dialog.dismiss());
  });
  // A's own page opened with another machine's fragment: B's real link, then a made-up one.
  const realB = new URL(await pairingLink(b)).hash;
  const bogus = `#url=${encodeURIComponent(b.wsUrl)}&token=bogus&name=work-laptop`;
  // Declined: nothing kept changes, and B is not even contacted (its secret stays unspent, used below).
  for (const fragment of [realB, bogus]) {
    await page.goto(`${a.httpUrl}/${fragment}`);
    await page.locator(`${SHOWN} .connection[data-state="open"], ${SHOWN} .connection[data-state="error"]`).waitFor();
    assert.deepEqual(await kept(page), before, `declined ${fragment.slice(0, 12)}…: nothing added`);
  }
  assert.equal(asked.length, 2, 'the person was asked each time');
  for (const question of asked) assert.match(question, /127\.0\.0\.1/, `the question names the machine (${question})`);
  assert.match(asked[1], /work-laptop/);
  // Agreed to the bogus link: the trial is refused, and still nothing is added.
  agree = true;
  await page.goto(`${a.httpUrl}/${bogus}`);
  await page.locator('.add-machine-status[data-kind="error"]', { hasText: 'refused this pairing link' }).waitFor();
  assert.deepEqual(await kept(page), before, 'a refused link adds nothing');
  // Agreed to B's real link (its secret unspent by the declined opening): added with its own credential.
  await page.goto(`${a.httpUrl}/${realB}`);
  await page.locator(`${SHOWN}[data-machine-id="${lanId(b)}"] .connection[data-state="open"]`).waitFor();
  const after = await kept(page);
  assert.deepEqual(after.machines.map((m) => m.id).sort(), [lanId(a), lanId(b)].sort());
  for (const m of after.machines) assert.ok(m.pairing.token && !m.pairing.pair, 'each with its own device credential');
  assert.equal(asked.length, 4);
  assert.deepEqual(phone.errors, []);
  await phone.context.close();
});

test("the unpaired page's first button opens Add a computer: a pasted link pairs and opens the machine", async () => {
  const context = await browser.newContext({ viewport: { width: 360, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.goto(`${a.httpUrl}/`);
  await page.locator('.pairing-form #pair-url').waitFor();
  await page.screenshot({ path: join('test-output', 'screens', 'first-open-360.png') });
  await page.locator('.pairing-scan').click();
  await page.locator('#ra-add-link').waitFor();
  await page.screenshot({ path: join('test-output', 'screens', 'first-open-add-360.png') });
  await page.locator('#ra-add-link').fill(await pairingLink(b));
  await page.locator('.add-machine-submit').click();
  await page.locator(`.machine-view[data-machine-id="${lanId(b)}"] .connection[data-state="open"]`).waitFor();
  assert.equal(await page.locator('.pairing-form').count(), 0, 'the unpaired page is gone');
  assert.ok(await page.locator('.machines-panel').isHidden(), 'the sheet closed on the machine');
  assert.deepEqual(errors, []);
  await context.close();
});
