/**
 * The phone page's saved prompts and instruction-file line (src/web/chat/agent-context-view.ts) in
 * Chromium, against the real service (test/helpers/phone-rig.ts). Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';
import { waitFor } from '../helpers/temp';
import { withoutNote } from '../helpers/service-note';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig();
  const prompts = join(rig.workspace.dir, '.remote-assistant', 'prompts');
  await mkdir(prompts, { recursive: true });
  await writeFile(join(prompts, 'review.md'), '---\ndescription: Which file to review\n---\nReview $ARGUMENTS for bugs and say what you would change.\n');
  await writeFile(join(prompts, 'tests.md'), '---\ndescription: Run the test suite\n---\nRun the tests and fix what fails.\n');
  await writeFile(join(rig.workspace.dir, 'AGENTS.md'), 'Use npm test.\n');
});
after(async () => {
  await rig?.close();
});

/** The user text of the newest request the model received. */
function lastUserText(): string {
  const messages = rig.fake.requests.at(-1)!.body.messages as { role: string; content: string }[];
  return withoutNote(messages)
    .filter((m) => m.role === 'user')
    .at(-1)!.content;
}

test('saved prompts are one-tap buttons; one with $ARGUMENTS asks for its argument first; /name args typed works too', async () => {
  const phone = await rig.openPhone();
  try {
    const { page } = phone;
    // The conversation header names the instruction files in force.
    await page.locator('.instructions-line .instruction-chip', { hasText: 'AGENTS.md' }).waitFor();
    assert.deepEqual(await page.locator('.prompt-button').allInnerTexts(), ['/review', '/tests']);

    const requests = rig.fake.requests.length;
    await page.locator('.prompt-button[data-prompt="review"]').click();
    const argument = page.locator('.prompt-argument');
    await argument.waitFor();
    assert.equal(rig.fake.requests.length, requests, 'nothing is sent before the argument is given');
    await argument.fill('src/server.ts');
    await argument.press('Enter');
    await page.locator('.message.user', { hasText: 'Review src/server.ts for bugs and say what you would change.' }).waitFor();
    await waitFor(() => rig.fake.requests.length > requests, 'the prompt reached the model');
    assert.equal(lastUserText(), 'Review src/server.ts for bugs and say what you would change.');
    assert.ok(await page.locator('.prompt-argument-form').isHidden(), 'the argument field closes once sent');

    // No argument: one tap sends it.
    const afterReview = rig.fake.requests.length;
    await page.locator('.prompt-button[data-prompt="tests"]').click();
    await waitFor(() => rig.fake.requests.length > afterReview, 'the second prompt reached the model');
    assert.equal(lastUserText(), 'Run the tests and fix what fails.');

    // Typed as a slash command (the editor's way), in the same conversation.
    const afterTests = rig.fake.requests.length;
    await page.locator('.composer-input').fill('/review lib/util.ts');
    await page.locator('.composer-input').press('Enter');
    await waitFor(() => rig.fake.requests.length > afterTests, 'the typed prompt reached the model');
    assert.equal(lastUserText(), 'Review lib/util.ts for bugs and say what you would change.');
    const chats = phone.sent.filter((f) => f.type === 'chat');
    assert.equal(new Set(chats.map((f) => f.conversation_id ?? 'new')).size, 2, 'the first chat starts the conversation; the others continue it');
    assert.deepEqual(phone.errors, []);
  } finally {
    await phone.close();
  }
});
