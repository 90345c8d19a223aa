/**
 * "Needs you" (issue 23, should-fix): prompts first however many runs finished, the badge counting
 * prompts (finished runs are counted on their machine's row), "Clear finished", and the preview one tap
 * away: the list's Allow is offered only beside the preview it allows. Real parts
 * (test/helpers/phone-rig.ts); runs after `node esbuild.mjs`. Screenshot in test-output/screens/.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { TestClient } from '../helpers/ws-client';

const SCREENS = resolve('test-output/screens');
let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'ask' });
  await mkdir(SCREENS, { recursive: true });
});

after(async () => {
  await rig?.close();
});

test('needs you: the prompt above six finished runs, the badge counts prompts, Allow only beside the preview, clear finished', async () => {
  const phone = await rig.openPhone();
  const { page } = phone;
  const other = await TestClient.authed(rig.svc.wsUrl, rig.svc.token);
  for (let i = 1; i <= 6; i++) {
    rig.fake.script({ text: `finished ${i}`, chunks: 1 });
    await other.request({ type: 'chat', message: `run ${i}` }, 20_000);
  }
  await page.locator('.machine-switch-badge:not([hidden])').waitFor();
  rig.fake.script({ tool_calls: [{ name: 'run_command', arguments: { command: 'echo from the list' } }] }, { text: 'Ran it.', chunks: 1 });
  const chat = other.request({ type: 'chat', message: 'run something' }, 30_000);

  // One computer: the bar's "1 waiting" counts the prompt; the chip's badge holds the count but gives way beside it (s32).
  await page.locator('.machine-switch-badge', { hasText: '1' }).waitFor({ state: 'attached' });
  await page.locator('.waiting-count', { hasText: '1 waiting' }).waitFor();
  assert.equal(await page.locator('.machine-switch-badge').isVisible(), false, 'counted once in the bar');
  await page.locator('.machine-switch').click();
  const items = page.locator('.needs-you-item');
  await page.locator('.needs-you-item[data-kind="prompt"]').waitFor();
  assert.deepEqual(
    await items.evaluateAll((nodes) => nodes.map((n) => (n as HTMLElement).dataset.kind)),
    ['prompt', 'finished', 'finished', 'finished', 'finished', 'finished', 'finished'],
    'the prompt first',
  );
  assert.equal(await page.locator('.machine-switch-badge').innerText(), '1', 'the badge counts the prompt, not the finished runs too');
  assert.match(await page.locator('.machines-panel .machine-state').innerText(), /1 waiting · 6 finished/, "the counts on the machine's row");

  const prompt = page.locator('.needs-you-item[data-kind="prompt"]');
  assert.equal(await prompt.locator('.needs-you-what').innerText(), 'Run echo from the list?', 'what it asks, in words (s26: was "Approve run_command? …")');
  assert.equal(await prompt.locator('.needs-you-allow').isVisible(), false, 'no Allow without the preview');
  await prompt.locator('.needs-you-show').click();
  assert.equal(await prompt.locator('.preview-command').innerText(), 'echo from the list', 'the preview, one tap away');
  await page.screenshot({ path: join(SCREENS, 'needs-you-390-light.png') });
  await prompt.locator('.needs-you-allow').click();
  const reply = await chat;
  assert.equal((reply.data as { response: string }).response, 'Ran it.');

  // The run just answered finished too (its turn.ended): seven, then none.
  await page.locator('.needs-you-item[data-kind="finished"]').nth(6).waitFor();
  await page.locator('.needs-you-clear').click();
  await page.locator('.needs-you-empty:not([hidden])').waitFor();
  assert.equal(await items.count(), 0);
  assert.ok(await page.locator('.needs-you-clear').isHidden());
  other.close();
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
