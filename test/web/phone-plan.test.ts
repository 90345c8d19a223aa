/**
 * The plan on the phone page (issue 22, "Shows its plan"): the model's `todo` calls in chats sent by
 * another client are drawn live as a checklist under the header, the card is back after a reload
 * (get_plan), and the conversation list row says "N of M done". Real parts: test/helpers/phone-rig.ts.
 * Runs after `npm run build`.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { PAGE_WAIT, startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { TestClient } from '../helpers/ws-client';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'ask' });
});

after(async () => {
  await rig?.close();
});

function planShown(page: Page): Promise<{ summary: string; items: [string, string][] }> {
  return page.evaluate(() => {
    const card = document.querySelector<HTMLDetailsElement>('.plan')!;
    return {
      summary: card.hidden ? '' : (card.querySelector('.plan-summary')?.textContent ?? ''),
      items: Array.from(card.querySelectorAll<HTMLElement>('.plan-item')).map((li) => [li.querySelector('.plan-text')?.textContent ?? '', li.dataset.status ?? ''] as [string, string]),
    };
  });
}

async function waitForSummary(page: Page, text: string): Promise<void> {
  await page.waitForFunction((wanted) => document.querySelector('.plan:not([hidden]) .plan-summary')?.textContent === wanted, text, { timeout: PAGE_WAIT });
}

test('the checklist is drawn live as the model updates it, comes back after a reload, and the list row says N of M done', async () => {
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  const phone = await rig.openPhone();
  const { page } = phone;
  try {
    const first = await other.request({ type: 'chat', message: 'plan the fix' });
    const conversationId = (first.data as { conversation_id: string }).conversation_id;
    await page.locator('.drawer-toggle').click();
    await page.locator('.conversation-open', { hasText: 'plan the fix' }).click();
    await page.waitForFunction(() => (document.querySelector('.message-list')?.textContent ?? '').includes('echo: plan the fix'), undefined, { timeout: PAGE_WAIT });
    assert.equal((await planShown(page)).summary, '', 'no plan yet: no card');

    rig.fake.script(
      {
        tool_calls: [
          {
            name: 'todo',
            arguments: {
              items: [
                { text: 'Read the code', status: 'in_progress' },
                { text: 'Fix <b>the</b> bug', status: 'pending' },
                { text: 'Run the tests', status: 'pending' },
              ],
            },
          },
        ],
      },
      { text: 'planned' },
    );
    // permission_mode is `ask`: the plan needs no prompt.
    assert.equal((await other.request({ type: 'chat', message: 'go on', conversation_id: conversationId })).status, 'ok');
    await waitForSummary(page, 'Plan · 0 of 3 done');

    rig.fake.script(
      {
        tool_calls: [
          {
            name: 'todo',
            arguments: {
              items: [
                { text: 'Read the code', status: 'done' },
                { text: 'Fix <b>the</b> bug', status: 'done' },
                { text: 'Run the tests', status: 'in_progress' },
              ],
            },
          },
        ],
      },
      { text: 'nearly there' },
    );
    assert.equal((await other.request({ type: 'chat', message: 'continue', conversation_id: conversationId })).status, 'ok');
    await waitForSummary(page, 'Plan · 2 of 3 done');
    const expected: [string, string][] = [
      ['Read the code', 'done'],
      ['Fix <b>the</b> bug', 'done'],
      ['Run the tests', 'in_progress'],
    ];
    assert.deepEqual((await planShown(page)).items, expected, 'each step with its state, text shown as text');
    const todoCards = page.locator('.tool-card[data-tool="todo"]');
    assert.ok((await todoCards.count()) > 0, 'the todo calls are in the transcript');
    assert.equal(await todoCards.first().isVisible(), false, 'but not drawn as tool cards: the plan card says it once');
    // To be looked at: the card under the header at a phone's size.
    await mkdir('test-output', { recursive: true });
    await page.screenshot({ path: 'test-output/phone-plan.png' });

    await page.reload();
    await waitForSummary(page, 'Plan · 2 of 3 done');
    assert.deepEqual((await planShown(page)).items, expected);
    await page.locator('.drawer-toggle').click();
    const row = page.locator('.conversation', { hasText: 'plan the fix' }).locator('.conversation-plan');
    await row.waitFor({ timeout: PAGE_WAIT });
    assert.equal(await row.textContent(), '2 of 3 done');
    assert.deepEqual(phone.errors, []);

    // The editor's chat view is the same page: opening the conversation there shows the same checklist.
    const view = await rig.openEditorView();
    try {
      await view.page.locator('.drawer-toggle').click();
      await view.page.locator('.conversation-open', { hasText: 'plan the fix' }).click();
      await waitForSummary(view.page, 'Plan · 2 of 3 done');
      assert.deepEqual((await planShown(view.page)).items, expected);
    } finally {
      await view.close();
    }
  } finally {
    other.close();
    await phone.close();
  }
});
