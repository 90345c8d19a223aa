/**
 * What a reply cost, on the chat page (the phone's, and the editor's view: one shared page): a line per
 * reply and the conversation's total with a context meter in the header, live and from the history.
 * Real parts (test/helpers/phone-rig.ts): the service with the fake OpenAI provider, Chromium. Runs after
 * `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { TestClient } from '../helpers/ws-client';

const ARTIFACTS = resolve('test-artifacts/web');
let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ prices: { 'openai/fake-model': { input: 2, output: 8, context_window: 8000 } } });
});
after(async () => {
  await rig?.close();
});

test('each reply shows its tokens and cost; the header the total and how full the context is; after a reload too', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  rig.fake.script(
    { text: 'first answer', usage: { prompt_tokens: 1000, completion_tokens: 200, prompt_tokens_details: { cached_tokens: 400 } } },
    { text: 'second answer', usage: { prompt_tokens: 2000, completion_tokens: 100 } },
  );
  const input = page.locator('.composer-input');
  await input.fill('one');
  await input.press('Enter');
  const first = page.locator('.message.assistant', { hasText: 'first answer' }).locator('.usage-line');
  await first.waitFor();
  // (600 × $2 + 400 × $2 (no cached price: the input price) + 200 × $8) per million = $0.0036.
  assert.equal(await first.innerText(), '1,000 in (400 cached) · 200 out · $0.0036');

  await input.fill('two');
  await input.press('Enter');
  const second = page.locator('.message.assistant', { hasText: 'second answer' }).locator('.usage-line');
  await second.waitFor();
  assert.equal(await second.innerText(), '2,000 in · 100 out · $0.0048');
  const total = page.locator('.topbar .usage-total');
  await page.waitForFunction(() => document.querySelector('.topbar .usage-total')?.textContent?.includes('$0.0084'));
  assert.equal(await total.innerText(), '3.3k tokens · $0.0084');
  const meter = page.locator('.topbar .context-meter');
  assert.equal(await meter.getAttribute('value'), '0.25');
  assert.equal(await meter.getAttribute('title'), 'Context: 2,000 of 8,000 tokens (25%)');
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: resolve(ARTIFACTS, 'usage.png') });

  await page.reload();
  await page.locator('.connection[data-state="open"]').waitFor();
  await page.locator('.message.assistant .usage-line').nth(1).waitFor();
  assert.deepEqual(await page.locator('.message.assistant .usage-line').allInnerTexts(), ['1,000 in (400 cached) · 200 out · $0.0036', '2,000 in · 100 out · $0.0048']);
  await page.waitForFunction(() => document.querySelector('.topbar .usage-total')?.textContent?.includes('$0.0084'));

  // A model without a price: no cost is shown, never a guess (a trailing "—" told nothing, s25); its title says why.
  const probe = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  await probe.request({ type: 'update_config', config: { model: 'fake-model-large' } });
  probe.close();
  rig.fake.script({ text: 'unpriced answer', usage: { prompt_tokens: 10, completion_tokens: 5 } });
  await input.fill('three');
  await input.press('Enter');
  const third = page.locator('.message.assistant', { hasText: 'unpriced answer' }).locator('.usage-line');
  await third.waitFor();
  assert.equal(await third.innerText(), '10 in · 5 out');
  assert.match((await third.getAttribute('title')) ?? '', /, no price known$/);
  // The conversation's total is unpriced now: the bar says its tokens alone (s24: a bare "—" told nothing on a phone).
  await page.waitForFunction(() => document.querySelector('.topbar .usage-total')?.textContent === '3.3k tokens');
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
