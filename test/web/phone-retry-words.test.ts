/**
 * The phone page speaks a person's words where it still named tools, and offers Retry where a person
 * expects it (s26, words26): a permission prompt asks "Run npm test?" (its command a text node, never
 * markup), a running command's line says "Running" once, undo's list says what a call did; a stopped turn
 * offers Retry, and so does a failed one after a reload (the history ends with a message nothing answered).
 * Real parts (test/helpers/phone-rig.ts: the service, the fake OpenAI provider, Debian's chromium); runs
 * after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { sendMessage as send, startPhoneRig, type PhoneRig } from '../helpers/phone-rig';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'ask' });
});

after(async () => {
  await rig?.close();
});

/** The user bubbles' texts, in order. */
const userTexts = (page: Page) => page.locator('.message.user .plain').allInnerTexts();

/** How many requests of the fake provider carried `text`. */
function asked(text: string): number {
  return rig.fake.requests.filter((request) => JSON.stringify(request.body).includes(text)).length;
}

/** Sends `text` to a provider that never answers, and taps Stop once its message is stored. */
async function sendAndStop(page: Page, text: string): Promise<void> {
  rig.fake.script({ hang: true });
  await send(page, text);
  await page.locator('.composer .stop').waitFor({ state: 'visible' });
  await page.waitForFunction(() => document.querySelector('.message.user')?.getAttribute('data-message-id'));
  await page.locator('.composer .stop').click();
}

test('a stopped turn offers Retry under its message; Retry answers that message, the model asked once more', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await sendAndStop(page, 'Stop me then retry');
  const notice = page.locator('.turn-failure', { hasText: 'Stopped' });
  await notice.locator('button.turn-retry').waitFor();
  assert.equal(asked('Stop me then retry'), 1);

  rig.fake.script({ text: 'Answered after the stop.', chunks: 1 });
  await notice.locator('button.turn-retry').click();
  await page.locator('.message.assistant', { hasText: 'Answered after the stop.' }).waitFor();
  assert.equal(asked('Stop me then retry'), 2, 'the model asked once more');
  assert.equal(await page.locator('.turn-failure').count(), 0, 'the notice goes once answered');
  assert.deepEqual(await userTexts(page), ['Stop me then retry'], 'the message once');
  assert.equal(phone.sent.filter((f) => f.type === 'retry_turn').length, 1);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('after a reload, a conversation whose last message failed offers Retry; Retry gets the answer, the model asked once more', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  rig.fake.script({ status: 401 });
  await send(page, 'Failed before the reload');
  await page.locator('.turn-failure button.turn-retry').waitFor();
  const live = await page.locator('.turn-failure .turn-failure-text').innerText();
  assert.match(live, /OpenAI key was refused/);
  await page.reload();
  await page.locator('.message.user', { hasText: 'Failed before the reload' }).waitFor();
  const notice = page.locator('.turn-failure');
  await notice.locator('button.turn-retry').waitFor();
  assert.equal(await notice.count(), 1, 'one notice');
  assert.equal(await notice.locator('.turn-failure-text').innerText(), live, 'the same words as live: the service kept why');
  const under = await page.locator('.message.user', { hasText: 'Failed before the reload' }).evaluate((node) => node.nextElementSibling?.className ?? '');
  assert.match(under, /turn-failure/, 'said under the message');

  const before = rig.fake.requests.length;
  rig.fake.script({ text: 'Answered after the reload.', chunks: 1 });
  await notice.locator('button.turn-retry').click();
  await page.locator('.message.assistant', { hasText: 'Answered after the reload.' }).waitFor();
  assert.equal(rig.fake.requests.length, before + 1, 'the model asked once more only');
  assert.equal(asked('Failed before the reload'), 2);
  assert.equal(await page.locator('.turn-failure').count(), 0);
  await page.reload();
  await page.locator('.message.assistant', { hasText: 'Answered after the reload.' }).waitFor();
  assert.equal(await page.locator('.turn-failure').count(), 0, 'an answered conversation offers no Retry after a reload');
  assert.deepEqual(await userTexts(page), ['Failed before the reload']);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('after a reload, a stopped turn still says Stopped, with Retry', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  await sendAndStop(page, 'Stopped before the reload');
  await page.locator('.turn-failure', { hasText: 'Stopped' }).waitFor();
  await page.reload();
  await page.locator('.message.user', { hasText: 'Stopped before the reload' }).waitFor();
  const notice = page.locator('.turn-failure');
  await notice.locator('button.turn-retry').waitFor();
  assert.equal(await notice.locator('.turn-failure-text').innerText(), 'Stopped');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test('a permission prompt asks in words ("Run … ?"), a running command says "Running" once, and markup in the command stays text', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const gate = join(rig.workspace.dir, 'go');
  const command = `while [ ! -f go ]; do sleep 0.05; done; echo "<img src=x onerror=window.__owned=1>"`;
  rig.fake.script({ tool_calls: [{ name: 'run_command', arguments: { command } }] }, { text: 'The command ran.', chunks: 1 });
  await send(page, 'Run the gated command');
  const card = page.locator('.permission-card');
  await card.waitFor();
  const title = (await card.locator('.permission-title').innerText()).replace(/\s+/g, ' ');
  assert.ok(title.startsWith('Run while [ ! -f go ]') && title.endsWith('…?'), `the question in words, the command cut: ${title}`);
  assert.equal(await card.locator('.permission-title code').count(), 1, 'the command as code');
  assert.equal(await card.locator('.permission-title img').count(), 0, 'the command is text, not markup');
  assert.match((await card.getAttribute('aria-label')) ?? '', /^Run while \[ ! -f go \]/);
  assert.doesNotMatch(await card.innerText(), /Allow run_command/);

  await card.locator('button[data-decision="allow"]').click();
  const tool = page.locator('.tool-card[data-tool="run_command"]');
  await page.waitForFunction(() => {
    const status = document.querySelector('.tool-card[data-tool="run_command"] .tool-status');
    return status?.getAttribute('data-status') === 'running';
  });
  const line = (await tool.locator(':scope > summary').innerText()).replace(/\s+/g, ' ').trim();
  assert.match(line, /^⚙ Running while/, 'the line says what runs');
  assert.doesNotMatch(line, /running…/, 'the state not said twice');
  await writeFile(gate, '');
  await page.locator('.message.assistant', { hasText: 'The command ran.' }).waitFor();
  assert.equal(await page.evaluate(() => (window as unknown as { __owned?: number }).__owned), undefined);
  assert.ok(existsSync(gate));
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
