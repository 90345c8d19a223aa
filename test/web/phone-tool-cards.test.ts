/**
 * Tool cards show what each tool did (issue 23, "Tool cards show no result"): the applied diff of
 * write_file / edit_file, a command's output (start and end, the middle a tap away) and exit code, what
 * was read (short), arguments as `key: value`, never escaped JSON; a deny by a rule names the rule, to
 * the person (the card) and to the model (the tool result). Live from `tool.result` and after a reload
 * from `get_messages include_tools`. Real parts (test/helpers/phone-rig.ts); runs after `node esbuild.mjs`.
 * Screenshots at 390 and 320 px, light and dark, go to test-output/screens/.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';

const SCREENS = resolve('test-output/screens');
const DENY_RULE = 'run_command:rm *';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'allow', permission_rules: { allow: [], deny: [DENY_RULE] } });
  await mkdir(SCREENS, { recursive: true });
});

after(async () => {
  await rig?.close();
});

/** The cards' state, as a person reads them, checked the same live and after a reload. */
async function checkCards(page: Page, when: string): Promise<void> {
  const open = async (tool: string): Promise<Locator> => {
    const card = page.locator(`.tool-card[data-tool="${tool}"]`).first();
    await card.locator('.tool-status:not([data-status="running"])').waitFor();
    if ((await card.getAttribute('open')) === null) await card.locator(':scope > summary').click();
    return card;
  };

  const write = await open('write_file');
  assert.equal(await write.locator('.tool-subject').innerText(), 'notes.txt', `${when}: the card's line names the path`);
  assert.deepEqual(await write.locator('.diff-line[data-kind="del"] .diff-text').allInnerTexts(), ['old second line'], `${when}: the applied diff, removed line`);
  assert.deepEqual(await write.locator('.diff-line[data-kind="add"] .diff-text').allInnerTexts(), ['new second line'], `${when}: the applied diff, added line`);
  assert.equal(await write.locator('.tool-arg[data-key="content"]').count(), 0, `${when}: the file's text is not repeated as an argument beside its diff`);
  assert.equal(await write.locator('.tool-arg[data-key="path"]').innerText(), 'path: notes.txt');

  const edit = await open('edit_file');
  assert.deepEqual(await edit.locator('.diff-line[data-kind="add"] .diff-text').allInnerTexts(), ['new second line, edited']);

  const run = await open('run_command');
  assert.equal(await run.locator('.tool-status').getAttribute('data-status'), 'failed');
  assert.match(await run.locator('.tool-status').innerText(), /exit code 3/, `${when}: the exit code on the card's line`);
  assert.equal(await run.locator('.tool-exit').innerText(), 'exit code 3');
  const output = run.locator('.tool-output');
  const folded = await output.innerText();
  assert.match(folded, /^line 1\n/, `${when}: the output's start`);
  assert.match(folded, /line 40$/, `${when}: the output's end, without the model's status line`);
  assert.doesNotMatch(folded, /line 20\n/, `${when}: the middle is folded`);
  await run.locator('.tool-output-more').click();
  assert.match(await output.innerText(), /line 19\nline 20\nline 21/, `${when}: "Show all" shows the middle`);
  // The command comes first in its card (s25): one line, opened on the whole, not repeated as an argument.
  await run.locator('.tool-command > summary').click();
  assert.equal(await run.locator('.tool-command-text').innerText(), 'for i in $(seq 1 40); do echo "line $i"; done\nexit 3', `${when}: a multi-line command, whole, not JSON`);
  assert.equal(await run.locator('.tool-arg[data-key="command"]').count(), 0);

  const read = await open('read_file');
  assert.ok((await read.locator('.tool-output').innerText()).split('\n').length <= 8, `${when}: what was read, short`);
  assert.match(await read.locator('.tool-output-more').innerText(), /Show all/);

  const denied = page.locator('.tool-card[data-tool="run_command"][data-status="denied"]');
  if ((await denied.getAttribute('open')) === null) await denied.locator(':scope > summary').click();
  assert.match(await denied.locator('.tool-denied-reason').innerText(), /deny rule "run_command:rm \*"/, `${when}: the person sees which rule denied it`);

  const text = await page.locator('.message-list').innerText();
  assert.doesNotMatch(text, /\{"|\\n|\\"/, `${when}: no escaped JSON anywhere in the cards`);
}

test("tool cards: the applied diff, a command's output and exit code, what was read, arguments as text, a rule's deny named", async () => {
  const ws = rig.workspace.dir;
  await writeFile(join(ws, 'notes.txt'), 'first line\nold second line\n');
  await writeFile(join(ws, 'long.txt'), Array.from({ length: 30 }, (_, i) => `row ${i + 1}`).join('\n'));
  rig.fake.script(
    { text: 'Changing notes.', tool_calls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'first line\nnew second line\n' } }] },
    { tool_calls: [{ name: 'edit_file', arguments: { path: 'notes.txt', old_string: 'new second line', new_string: 'new second line, edited' } }] },
    { tool_calls: [{ name: 'run_command', arguments: { command: 'for i in $(seq 1 40); do echo "line $i"; done\nexit 3' } }] },
    { tool_calls: [{ name: 'read_file', arguments: { path: 'long.txt' } }] },
    { tool_calls: [{ name: 'run_command', arguments: { command: 'rm -rf build' } }] },
    { text: 'All done.' },
  );
  const phone = await rig.openPhone();
  const { page } = phone;
  const input = page.locator('.composer-input');
  await input.fill('show me the cards');
  await input.press('Enter');
  await page.locator('.message.assistant', { hasText: 'All done.' }).waitFor();
  await checkCards(page, 'live');

  // The model was told which rule refused the call, not that a person did.
  const told = JSON.stringify(rig.fake.requests.at(-1)?.body);
  assert.match(told, /deny rule \\"run_command:rm \*\\"/, 'the tool result the model reads names the rule');
  assert.doesNotMatch(told, /the user did not allow/);

  await page.reload();
  await page.locator('.connection[data-state="open"]').waitFor();
  await page.locator('.drawer-toggle').click();
  await page.locator('.conversation-open', { hasText: 'show me the cards' }).click();
  await page.locator('.message.assistant', { hasText: 'All done.' }).waitFor();
  await checkCards(page, 'after a reload');

  for (const width of [390, 320]) {
    for (const scheme of ['light', 'dark'] as const) {
      await page.setViewportSize({ width, height: 844 });
      await page.emulateMedia({ colorScheme: scheme });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `nothing wider than the viewport at ${width} px (${overflow} px over)`);
      await page.locator('.tool-card[data-tool="write_file"]').scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(SCREENS, `tool-cards-diff-${width}-${scheme}.png`) });
      await page.locator('.tool-card[data-tool="run_command"]').first().scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(SCREENS, `tool-cards-command-${width}-${scheme}.png`) });
    }
  }
  assert.deepEqual(phone.errors, []);
  await phone.close();
});
