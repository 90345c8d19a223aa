/**
 * Compaction on the phone page (issue 22, "Never forgets silently"): the Compact button beside the context
 * meter summarises the earlier turns; the summary is drawn as an "Earlier turns summarised" card whose text
 * expands, it is still there after a reload (a stored message), and the earlier messages stay on screen.
 * Real parts: test/helpers/phone-rig.ts (a real service, the fake provider, Chromium). Runs after `npm run build`.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { PAGE_WAIT, startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { TestClient } from '../helpers/ws-client';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({});
});

after(async () => {
  await rig?.close();
});

test('Compact summarises the earlier turns into a card that expands and survives a reload', async () => {
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const phone = await rig.openPhone();
  const { page } = phone;
  try {
    const first = await other.request({ type: 'chat', message: 'tidy the reports; never touch the migrations folder' });
    const conversationId = (first.data as { conversation_id: string }).conversation_id;
    assert.equal((await other.request({ type: 'chat', message: 'now the second report', conversation_id: conversationId })).status, 'ok');
    assert.equal((await other.request({ type: 'chat', message: 'and the third', conversation_id: conversationId })).status, 'ok');
    await page.locator('.drawer-toggle').click();
    await page.locator('.conversation-open', { hasText: 'tidy the reports' }).click();
    await page.waitForFunction(() => (document.querySelector('.message-list')?.textContent ?? '').includes('echo: and the third'), undefined, { timeout: PAGE_WAIT });

    const asked = rig.fake.requests.length;
    rig.fake.script({ text: '## Goal\nTidy the reports.\n\n## Constraints and decisions\n- Never touch the migrations folder.' });
    await page.locator('.compact-button').click();
    const card = page.locator('.summary-card');
    await card.waitFor({ timeout: PAGE_WAIT });
    assert.match(await card.locator('summary').innerText(), /^Earlier turns summarised/);
    assert.equal(await card.locator('.markdown').isVisible(), false, 'collapsed at first');
    await card.locator('summary').click();
    assert.match(await card.locator('.markdown').innerText(), /Never touch the migrations folder/);
    const sizes = await card
      .locator('.markdown')
      .evaluate((node) => ({ text: parseFloat(getComputedStyle(node).fontSize), heading: parseFloat(getComputedStyle(node.querySelector('h2')!).fontSize) }));
    assert.ok(sizes.heading <= sizes.text * 1.3, `a heading stays near the text size (${sizes.heading} px against ${sizes.text} px)`);
    const summariseRequest = JSON.stringify(rig.fake.requests[asked]?.body ?? '');
    assert.match(summariseRequest, /never touch the migrations folder/, 'the model was asked to summarise the earlier turns');
    const shown = await page.locator('.message-list > .message').count();
    assert.ok(shown >= 6, `the earlier messages stay on screen (${shown})`);

    await mkdir('test-output/phone-compaction', { recursive: true });
    await page.screenshot({ path: 'test-output/phone-compaction/summary-card.png' });

    await page.reload();
    await page.locator('.drawer-toggle').click();
    await page.locator('.conversation-open', { hasText: 'tidy the reports' }).click();
    await page.locator('.summary-card').waitFor({ timeout: PAGE_WAIT });
    assert.match(await page.locator('.summary-card summary').innerText(), /^Earlier turns summarised/, 'stored: back after a reload');
    assert.ok((await page.locator('.message-list').innerText()).includes('tidy the reports; never touch the migrations folder'), 'the first message is still there');
    assert.deepEqual(phone.errors, []);
  } finally {
    other.close();
    await phone.context.close();
  }
});
