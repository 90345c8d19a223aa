/**
 * Show it a picture (issue 14), page side: a photo chosen on the phone page (Chromium, the file chooser,
 * a real JPEG whose EXIF says "rotate 90°") is turned upright, scaled to 2048 pixels, stripped of its
 * metadata, uploaded in chunks and reaches the fake provider as an image part in the provider's format
 * (OpenAI, then Anthropic); the message shows its thumbnail, after a reload too. Runs after `node esbuild.mjs`.
 * Screenshots: test-output/screenshots/.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startFakeAnthropic, type FakeAnthropic } from '../helpers/fake-anthropic';
import { startPhoneRig, type PhonePage, type PhoneRig } from '../helpers/phone-rig';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

const SCREENSHOTS = resolve('test-output/screenshots');
let rig: PhoneRig;
let anthropic: FakeAnthropic;
let phone: PhonePage;
let photo: Buffer;

before(async () => {
  await mkdir(SCREENSHOTS, { recursive: true });
  anthropic = await startFakeAnthropic();
  rig = await startPhoneRig({ permission_mode: 'allow', vision_models: { 'fake-model': true } });
  phone = await rig.openPhone();
  photo = withExifOrientation6(await landscapeJpeg(phone.page));
});

after(async () => {
  await phone?.close();
  await rig?.close();
  await anthropic?.close();
});

/** A 3000×2000 JPEG as a camera stores it: red left half, blue right half (encoded by Chromium's canvas). */
async function landscapeJpeg(page: Page): Promise<Buffer> {
  const dataUrl = await page.evaluate(() => {
    const canvas = document.createElement('canvas');
    canvas.width = 3000;
    canvas.height = 2000;
    const context = canvas.getContext('2d')!;
    context.fillStyle = '#f00';
    context.fillRect(0, 0, 1500, 2000);
    context.fillStyle = '#00f';
    context.fillRect(1500, 0, 1500, 2000);
    return canvas.toDataURL('image/jpeg', 0.9);
  });
  return Buffer.from(dataUrl.split(',')[1], 'base64');
}

/**
 * The JPEG with an EXIF APP1 segment saying Orientation 6 (the camera was turned: show it rotated 90°
 * clockwise) and a GPS IFD holding a position, after the JFIF APP0 segment, as phones write them.
 */
function withExifOrientation6(jpeg: Buffer): Buffer {
  // TIFF, big-endian: IFD0 with Orientation = 6 and a GPS IFD pointer; the GPS IFD with GPSLatitudeRef = "N".
  const tiff = Buffer.from([
    0x4d, 0x4d, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x08, 0x00, 0x02, 0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06, 0x00, 0x00, 0x88, 0x25, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x26, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x4e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  ]);
  const body = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]);
  const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, (body.length + 2) >> 8, (body.length + 2) & 0xff]), body]);
  assert.deepEqual([...jpeg.subarray(0, 4)], [0xff, 0xd8, 0xff, 0xe0], 'Chromium writes SOI then JFIF APP0');
  const afterApp0 = 4 + jpeg.readUInt16BE(4);
  return Buffer.concat([jpeg.subarray(0, afterApp0), app1, jpeg.subarray(afterApp0)]);
}

/** Width and height from a JPEG's start-of-frame segment. */
function jpegSize(jpeg: Buffer): { width: number; height: number } {
  for (let at = 2; at < jpeg.length;) {
    const marker = jpeg[at + 1];
    const length = jpeg.readUInt16BE(at + 2);
    if (marker >= 0xc0 && marker <= 0xc3) return { height: jpeg.readUInt16BE(at + 5), width: jpeg.readUInt16BE(at + 7) };
    at += 2 + length;
  }
  throw new Error('no start-of-frame segment');
}

/** The colour at (x, y) of a JPEG, decoded by the page: [r, g, b]. */
function pixel(page: Page, jpeg: Buffer, x: number, y: number): Promise<number[]> {
  return page.evaluate(
    async ({ url, x, y }) => {
      // An <img> (the page's policy allows data: images, not fetching them).
      const image = new Image();
      image.src = url;
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.naturalWidth;
      canvas.height = image.naturalHeight;
      const context = canvas.getContext('2d')!;
      context.drawImage(image, 0, 0);
      return [...context.getImageData(x, y, 1, 1).data.slice(0, 3)];
    },
    { url: `data:image/jpeg;base64,${jpeg.toString('base64')}`, x, y },
  );
}

async function attachPhoto(page: Page, name: string): Promise<void> {
  const chooser = page.waitForEvent('filechooser');
  await page.locator('.composer .attach').click();
  await (await chooser).setFiles({ name, mimeType: 'image/jpeg', buffer: photo });
  await page.locator('.attachment-chip[data-state="ready"]').waitFor({ timeout: 20_000 });
}

async function sendText(page: Page, text: string): Promise<void> {
  await page.locator('.composer-input').fill(text);
  await page.locator('.composer-input').press('Enter');
}

/** The image the provider received in the last user turn, as bytes. */
function receivedImage(url: string): Buffer {
  const match = /^data:image\/jpeg;base64,(.+)$/.exec(url);
  assert.ok(match, `a JPEG data URL, got ${url.slice(0, 40)}`);
  return Buffer.from(match[1], 'base64');
}

function assertUprightAndClean(page: Page, jpeg: Buffer): Promise<void> {
  // 3000×2000 turned by 90° is 2000×3000, scaled so its longest side is 2048.
  assert.deepEqual(jpegSize(jpeg), { width: 1365, height: 2048 });
  assert.equal(jpeg.includes(Buffer.from('Exif\0\0', 'latin1')), false, 'no EXIF (nor its GPS position) left');
  return (async () => {
    // Rotated clockwise, the left (red) half is on top and the right (blue) half below.
    const [top, bottom] = [await pixel(page, jpeg, 680, 300), await pixel(page, jpeg, 680, 1750)];
    assert.ok(top[0] > 200 && top[2] < 60, `top is red: ${top}`);
    assert.ok(bottom[2] > 200 && bottom[0] < 60, `bottom is blue: ${bottom}`);
  })();
}

test('a photo from the phone reaches OpenAI as an image_url part, upright, scaled and without EXIF; the message shows its thumbnail, after a reload too', { timeout: 90_000 }, async () => {
  const { page } = phone;
  assert.equal(await page.locator('.composer .camera').isVisible(), true, 'a camera button on a touch screen');
  assert.deepEqual(await page.locator('.camera-input').evaluate((input) => [input.getAttribute('accept'), input.getAttribute('capture')]), ['image/*', 'environment']);
  await attachPhoto(page, 'IMG_0001.jpg');
  await page.screenshot({ path: join(SCREENSHOTS, 'phone-attachment-tray.png') });
  const before = rig.fake.requests.length;
  await sendText(page, 'what colours are these?');
  await rig.fake.waitFor((requests) => requests.length > before, 20_000);
  const turn = withoutNote(rig.fake.requests.at(-1)!.body.messages as { role: string; content: unknown }[])
    .filter((m) => m.role === 'user')
    .pop()!;
  const parts = turn.content as { type: string; text?: string; image_url?: { url: string } }[];
  assert.deepEqual(parts[0], { type: 'text', text: 'what colours are these?' });
  assert.equal(parts[1].type, 'image_url');
  await assertUprightAndClean(page, receivedImage(parts[1].image_url!.url));

  await page.locator('.message.user .attachment-image[src^="data:image/jpeg"]').waitFor();
  await page.locator('.message.assistant:not(.streaming)').first().waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, 'phone-attachment-sent.png') });
  // From history: the thumbnail is read back with get_attachment.
  await page.reload();
  await page.locator('.connection[data-state="open"]').waitFor();
  await page.locator('.message.user .attachment-image[src^="data:image/jpeg"]').waitFor();
  assert.ok(
    phone.sent.some((frame) => frame.type === 'get_attachment'),
    'read back through the protocol',
  );
  assert.deepEqual(phone.errors, []);
});

test('a photo from the phone reaches Anthropic as an image block with a base64 source, upright', { timeout: 90_000 }, async () => {
  const owner = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  try {
    const changed = await owner.request({ type: 'update_config', config: { provider: 'anthropic', base_url: anthropic.url, model: 'claude-sonnet-4-6' } });
    assert.equal(changed.status, 'ok', JSON.stringify(changed));
    const { page } = phone;
    await attachPhoto(page, 'IMG_0002.jpg');
    const before = anthropic.requests.length;
    await sendText(page, 'and this one?');
    await anthropic.waitFor((requests) => requests.length > before, 20_000);
    const turn = (anthropic.requests.at(-1)!.body.messages as { role: string; content: unknown }[]).pop()!;
    const blocks = turn.content as { type: string; text?: string; source?: { type: string; media_type: string; data: string } }[];
    assert.deepEqual(blocks[0], { type: 'text', text: 'and this one?' });
    assert.deepEqual({ type: blocks[1].type, source: blocks[1].source!.type, media_type: blocks[1].source!.media_type }, { type: 'image', source: 'base64', media_type: 'image/jpeg' });
    await assertUprightAndClean(page, Buffer.from(blocks[1].source!.data, 'base64'));
    await page.locator('.message.user .attachment-image').nth(1).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, 'phone-attachment-anthropic.png') });
    assert.deepEqual(phone.errors, []);
  } finally {
    owner.close();
  }
});

test('an image the agent reads (read_file) is shown on the phone with its tool, live and after a reload', { timeout: 90_000 }, async () => {
  const owner = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  try {
    const changed = await owner.request({ type: 'update_config', config: { provider: 'openai', base_url: rig.fake.url, model: 'fake-model' } });
    assert.equal(changed.status, 'ok', JSON.stringify(changed));
  } finally {
    owner.close();
  }
  await writeFile(join(rig.workspace.dir, 'whiteboard.jpg'), photo);
  rig.fake.script({ tool_calls: [{ name: 'read_file', arguments: { path: 'whiteboard.jpg' } }] }, { text: 'I opened the whiteboard photo.' });
  const { page } = phone;
  await sendText(page, 'show me whiteboard.jpg');
  const shown = page.locator('.tool-card[data-tool="read_file"] + .attachments .attachment-image[src^="data:image/jpeg"]');
  await shown.waitFor({ timeout: 20_000 });
  await page.locator('.message.assistant', { hasText: 'I opened the whiteboard photo.' }).waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, 'phone-agent-read-image.png') });
  await page.reload();
  await page.locator('.connection[data-state="open"]').waitFor();
  await shown.waitFor();
  assert.deepEqual(phone.errors, []);
});

test(
  'pasted and dropped files (the editor view has the same handlers) upload as chips; a message with only attachments is sent; a file is saved into the workspace and shown by name',
  { timeout: 90_000 },
  async () => {
    const { page } = phone;
    await page.locator('.drawer-toggle').click();
    await page.locator('.new-chat').click();
    // A screenshot pasted into the message box, then a CSV dropped on the conversation.
    await page.locator('.composer-input').evaluate(
      async (input, png) => {
        const data = new DataTransfer();
        data.items.add(new File([Uint8Array.from(atob(png), (c) => c.charCodeAt(0))], 'pasted.png', { type: 'image/png' }));
        input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
      },
      await pngOf(page),
    );
    await page.locator('.main').evaluate((main) => {
      const data = new DataTransfer();
      data.items.add(new File(['city,rain_mm\nBrest,1200\n'], 'rain.csv', { type: 'text/csv' }));
      main.dispatchEvent(new DragEvent('dragover', { dataTransfer: data, bubbles: true, cancelable: true }));
      main.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await page.locator('.attachment-chip[data-state="ready"]').nth(1).waitFor({ timeout: 20_000 });
    await page.screenshot({ path: join(SCREENSHOTS, 'phone-attachment-paste-drop.png') });
    const before = rig.fake.requests.length;
    await page.locator('.composer .send').click();
    await rig.fake.waitFor((requests) => requests.length > before, 20_000);
    const turn = withoutNote(rig.fake.requests.at(-1)!.body.messages as { role: string; content: unknown }[])
      .filter((m) => m.role === 'user')
      .pop()!;
    const parts = turn.content as { type: string; text?: string; image_url?: { url: string } }[];
    assert.equal(parts[0].type, 'text');
    assert.match(parts[0].text!, /\[Attached file: \.remote-assistant\/attachments\/[0-9a-f]{8}-rain\.csv \(text\/csv, 24 bytes\)\]/);
    assert.equal(parts[1].type, 'image_url', 'the pasted image as an image');
    await page.locator('.message.user .attachment-file', { hasText: 'rain.csv' }).waitFor();
    await page.locator('.message.user .attachment-image').last().waitFor();
    assert.deepEqual(phone.errors, []);
  },
);

/** A small real PNG, drawn by the page. */
async function pngOf(page: Page): Promise<string> {
  const url = await page.evaluate(() => {
    const canvas = document.createElement('canvas');
    canvas.width = 120;
    canvas.height = 80;
    const context = canvas.getContext('2d')!;
    context.fillStyle = '#0a0';
    context.fillRect(0, 0, 120, 80);
    return canvas.toDataURL('image/png');
  });
  return url.split(',')[1];
}
