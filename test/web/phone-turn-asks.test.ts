/**
 * What the chat page asks after a turn (s33, issue 25's crossings): list_instructions only when turn.ended's
 * `instructions` differs from the files shown, list_turn_changes only when the turn wrote files. Real parts:
 * the service in process with the fake OpenAI provider, a temp workspace with its AGENTS.md, media/ served,
 * Debian's chromium at a phone's size, the page's own WebSocket frames read. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'allow' });
});

after(async () => {
  await rig?.close();
});

/** The events the page received over its socket, by name, in order. */
function receivedEvents(page: Page): string[] {
  const events: string[] = [];
  page.on('websocket', (socket) =>
    socket.on('framereceived', (frame) => {
      const event = (JSON.parse(String(frame.payload)) as { event?: string }).event;
      if (event) events.push(event);
    }),
  );
  return events;
}

test("after a turn that wrote nothing and changed no instruction file the page asks neither list; an AGENTS.md edited between turns shows after the next; a turn's write offers Undo", async () => {
  const ws = rig.workspace.dir;
  await writeFile(join(ws, 'AGENTS.md'), 'first rules\n');
  let events: string[] = [];
  const phone = await rig.openPhone(async (page) => void (events = receivedEvents(page)));
  const { page, sent } = phone;
  const asked = (type: string) => sent.filter((frame) => frame.type === type).length;
  const input = page.locator('.composer-input');
  const chip = page.locator('.instruction-chip', { hasText: 'AGENTS.md' });
  const turn = async (message: string, reply: string) => {
    const ended = events.filter((e) => e === 'turn.ended').length;
    rig.fake.script({ text: reply });
    await input.fill(message);
    await input.press('Enter');
    await page.locator('.message.assistant:not(.streaming)', { hasText: reply }).waitFor();
    // Its turn.ended received and handled (the page's handling of it runs before the evaluate's task).
    for (let waited = 0; events.filter((e) => e === 'turn.ended').length === ended; waited += 20) {
      assert.ok(waited < 10_000, 'no turn.ended within 10 s');
      await page.waitForTimeout(20);
    }
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)));
  };

  await turn('first message', 'First reply.');
  await chip.waitFor();
  assert.match((await chip.getAttribute('title')) ?? '', /AGENTS\.md, 12 bytes/);
  const instructionsAsked = asked('list_instructions');
  const changesAsked = asked('list_turn_changes');

  await turn('second message', 'Second reply.');
  await turn('third message', 'Third reply.');
  assert.equal(asked('list_instructions'), instructionsAsked, 'nothing in force changed: not asked again');
  assert.equal(asked('list_turn_changes'), changesAsked, 'the turns wrote no file: not asked again');

  // The person edits AGENTS.md between turns: shown after the next turn.
  await writeFile(join(ws, 'AGENTS.md'), 'second rules, longer\n');
  await turn('fourth message', 'Fourth reply.');
  await page.locator('.instruction-chip[title*="AGENTS.md, 21 bytes"]').waitFor();
  assert.equal(asked('list_instructions'), instructionsAsked + 1);

  // A turn that writes a file: its reply offers Undo, as before.
  rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'made.txt', content: 'made\n' } }] }, { text: 'Made the file.' });
  await input.fill('make a file');
  await input.press('Enter');
  await page.locator('.message.assistant', { hasText: 'Made the file.' }).locator('.undo-turn').waitFor();
  assert.equal(asked('list_turn_changes'), changesAsked + 1);
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
