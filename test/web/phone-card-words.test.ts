/**
 * The phone page's tool cards read like a person's log (s25, cards25; walk24's findings): each card's
 * line says what the call did in words ("Ran npm test", "Read src/app.ts", "Searched for “foo” in *.ts",
 * "Edited src/app.ts", an MCP tool "add (calc)"), an edit's line its size ("+12 −3", read as "12 lines
 * added, 3 removed"), a command's card opens on the command (one line, the whole a tap away) with its
 * exit status beside it, then its output; Export has an accessible name and a tooltip. Live and after a
 * reload (get_messages). Real parts: the service with the fake OpenAI provider, a real MCP server
 * (test/helpers/mcp-server.mjs), Debian's chromium. Screens at 320, 360 and 390 px, light and dark, under
 * test-output/screens/cards-*.png. Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { startPhoneRig, type PhoneRig } from '../helpers/phone-rig';

const SCREENS = resolve('test-output/screens');
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const MCP_SERVER = join(__dirname, '..', 'helpers', 'mcp-server.mjs');
const LONG_COMMAND = 'grep -rn --include=*.ts "TODO" src/components/settings/very-long-folder-name/ | sort | head -n 40';

let rig: PhoneRig;

before(async () => {
  rig = await startPhoneRig({ permission_mode: 'allow', mcp_servers: { calc: { command: process.execPath, args: [MCP_SERVER] } } });
  await mkdir(SCREENS, { recursive: true });
  const ws = rig.workspace.dir;
  await mkdir(join(ws, 'src'), { recursive: true });
  await writeFile(join(ws, 'package.json'), JSON.stringify({ name: 'demo', private: true, scripts: { test: 'echo "12 passing"' } }));
  await writeFile(join(ws, 'src', 'app.ts'), ['// app', 'const a = 1;', 'const b = 2;', 'const c = 3;', 'export { a };', ''].join('\n'));
});

after(async () => {
  await rig?.close();
});

/** The `n`th card (0-based) of `tool`, finished, opened. */
async function card(page: Page, tool: string, n = 0): Promise<Locator> {
  const found = page.locator(`.tool-card[data-tool="${tool}"]`).nth(n);
  await found.locator('.tool-status:not([data-status="running"])').waitFor();
  return found;
}

async function opened(found: Locator): Promise<Locator> {
  if ((await found.getAttribute('open')) === null) await found.locator(':scope > summary').click();
  return found;
}

/** The words on a card's line, as seen. */
const words = async (found: Locator): Promise<string> => (await found.locator(':scope > summary .tool-words').innerText()).replace(/\s+/g, ' ').trim();

async function checkCards(page: Page, when: string): Promise<void> {
  assert.equal(await words(await card(page, 'read_file')), 'Read src/app.ts', `${when}: a read`);
  assert.equal(await words(await card(page, 'search_files')), 'Searched for “foo” in *.ts', `${when}: a search`);
  assert.equal(await words(await card(page, 'write_file')), 'Created notes/new.md', `${when}: a new file`);
  assert.equal(await words(await card(page, 'list_directory')), 'Listed the workspace folder', `${when}: a listing`);
  assert.equal(await words(await card(page, 'calc.add')), 'add (calc)', `${when}: an MCP tool: "<tool> (server)"`);
  assert.equal(await words(await card(page, 'run_command')), 'Ran npm test', `${when}: a command`);
  assert.ok((await words(await card(page, 'run_command', 1))).startsWith(`Ran ${LONG_COMMAND.slice(0, 60)}`), `${when}: a long command (cut on screen)`);

  // An edit's size on its line: signs and numbers as text, read as words.
  const edit = await card(page, 'edit_file');
  assert.equal(await words(edit), 'Edited src/app.ts', `${when}: an edit`);
  const size = edit.locator(':scope > summary .tool-size');
  assert.equal((await size.innerText()).replace(/\s+/g, ' '), '+12 −3', `${when}: lines added and removed, seen`);
  assert.match(await edit.locator(':scope > summary').ariaSnapshot(), /12 lines added, 3 removed/, `${when}: lines added and removed, heard`);
  const added = await size.locator('.diff-stat-add').evaluate((e) => getComputedStyle(e).color);
  const removed = await size.locator('.diff-stat-del').evaluate((e) => getComputedStyle(e).color);
  assert.notEqual(added, removed, `${when}: added green, removed red`);
  assert.equal(await (await card(page, 'write_file')).locator(':scope > summary .tool-size').innerText(), '+2', `${when}: a new file's size: nothing removed is left out`);
  assert.equal(await (await card(page, 'read_file')).locator('.tool-size').isVisible(), false, `${when}: a read has no size`);

  // A command's card: the command first, its exit status beside it, then the output.
  const run = await opened(await card(page, 'run_command'));
  const command = run.locator('.tool-command');
  assert.equal(await command.locator('.tool-command-text').innerText(), 'npm test', `${when}: the command`);
  assert.equal(await command.locator('.tool-exit').innerText(), 'exit code 0', `${when}: its exit status beside it`);
  const order = await run.evaluate((node) => {
    const commandNode = node.querySelector('.tool-command');
    const output = node.querySelector('.tool-output');
    return commandNode && output ? commandNode.compareDocumentPosition(output) & Node.DOCUMENT_POSITION_FOLLOWING : -1;
  });
  assert.ok(order > 0, `${when}: the command comes before its output`);
  assert.match(await run.locator('.tool-output').innerText(), /12 passing/, `${when}: the output`);
  assert.equal(await run.locator('.tool-arg[data-key="command"]').count(), 0, `${when}: the command is not repeated as an argument`);

  // A long command: one line cut with an ellipsis, the whole a tap away.
  const long = await opened(await card(page, 'run_command', 1));
  const line = long.locator('.tool-command-text');
  const cut = await line.evaluate((e) => ({ style: getComputedStyle(e).textOverflow, over: e.scrollWidth > e.clientWidth, height: e.getBoundingClientRect().height }));
  assert.equal(cut.style, 'ellipsis', `${when}: a long command's line ends with an ellipsis`);
  assert.ok(cut.over, `${when}: the long command is cut to one line`);
  await long.locator('.tool-command > summary').click();
  const whole = await line.evaluate((e) => ({ over: e.scrollWidth > e.clientWidth, height: e.getBoundingClientRect().height }));
  assert.ok(!whole.over && whole.height > cut.height, `${when}: opened, the whole command shows`);
  assert.equal(await line.innerText(), LONG_COMMAND);
  assert.match(await long.locator('.tool-command .tool-exit').innerText(), /exit code \d/, `${when}: its exit status`);
}

test("tool cards read as a person: words per tool, an edit's size, the command before its output, Export named", async () => {
  const editedLines = Array.from({ length: 12 }, (_, i) => `const n${i + 1} = ${i + 1};`).join('\n');
  rig.fake.script(
    { text: 'Looking around.', tool_calls: [{ name: 'read_file', arguments: { path: 'src/app.ts' } }] },
    { tool_calls: [{ name: 'search_files', arguments: { pattern: 'foo', glob: '*.ts' } }] },
    { tool_calls: [{ name: 'edit_file', arguments: { path: 'src/app.ts', old_string: 'const a = 1;\nconst b = 2;\nconst c = 3;', new_string: editedLines } }] },
    { tool_calls: [{ name: 'write_file', arguments: { path: 'notes/new.md', content: '# Notes\nfirst\n' } }] },
    { tool_calls: [{ name: 'list_directory', arguments: {} }] },
    (request) => {
      const name = (request.body.tools as { function: { name: string } }[]).map((t) => t.function.name).find((n) => n.includes('add'))!;
      return { tool_calls: [{ name, arguments: { a: 2, b: 40 } }] };
    },
    { tool_calls: [{ name: 'run_command', arguments: { command: 'npm test' } }] },
    { tool_calls: [{ name: 'run_command', arguments: { command: LONG_COMMAND } }] },
    { text: 'All done.' },
  );
  const phone = await rig.openPhone();
  const { page } = phone;
  const input = page.locator('.composer-input');
  await input.fill('tidy the app');
  await input.press('Enter');
  await page.locator('.message.assistant', { hasText: 'All done.' }).waitFor();
  await checkCards(page, 'live');

  // Export: named for a screen reader, a tooltip for a pointer.
  const exportButton = page.locator('.export-toggle');
  assert.equal(await exportButton.getAttribute('aria-label'), null, 'named by its own text, not only a label');
  const named = page.getByRole('button', { name: 'Export', exact: true });
  assert.equal(await named.count(), 1, 'Export has an accessible name');
  assert.equal(await named.getAttribute('title'), 'Export or share this conversation', 'and a tooltip');
  assert.equal(await named.locator('.export-label').innerText(), 'Export', 'and a visible label');

  await page.reload();
  await page.locator('.connection[data-state="open"]').waitFor();
  await page.locator('.drawer-toggle').click();
  await page.locator('.conversation-open', { hasText: 'tidy the app' }).click();
  await page.locator('.message.assistant', { hasText: 'All done.' }).waitFor();
  await checkCards(page, 'after a reload');

  for (const width of [320, 360, 390]) {
    for (const scheme of ['light', 'dark'] as const) {
      await page.setViewportSize({ width, height: 740 });
      await page.emulateMedia({ colorScheme: scheme });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `nothing wider than the viewport at ${width} px (${overflow} px over)`);
      // Export starts the top bar's second row, beside the mode selector, leaving the title its row.
      const bar = await page.evaluate(() => {
        const [exp, mode, title] = ['.export-toggle', '.mode-select', '.topbar .title'].map((selector) => document.querySelector(selector)!.getBoundingClientRect());
        return { exportMiddle: exp.top + exp.height / 2, modeMiddle: mode.top + mode.height / 2, titleBottom: title.bottom, exportTop: exp.top };
      });
      assert.ok(Math.abs(bar.exportMiddle - bar.modeMiddle) < 12 && bar.exportTop >= bar.titleBottom - 1, `${width} px: Export on the mode selector's row, under the title (${JSON.stringify(bar)})`);
      // Every card's line is one line: the words cut, the size and status kept whole.
      for (const summary of await page.locator('.tool-card:not([data-tool="todo"]) > summary').all()) {
        const box = await summary.evaluate((e) => {
          const status = e.querySelector('.tool-status')!.getBoundingClientRect();
          const words = e.querySelector('.tool-words')!.getBoundingClientRect();
          return { status: status.height, words: words.height, summary: e.getBoundingClientRect().height, statusRight: status.right, right: e.getBoundingClientRect().right };
        });
        assert.ok(box.words < 2 * box.status + 4 && box.statusRight <= box.right + 0.5, `${width} px: a card's line stays one line (${JSON.stringify(box)})`);
      }
      await page.locator('.tool-card[data-tool="read_file"]').scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(SCREENS, `cards-top-${width}-${scheme}.png`) });
      const last = page.locator('.tool-card[data-tool="run_command"]').last();
      await last.scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(SCREENS, `cards-commands-${width}-${scheme}.png`) });
      // The long command's line closed: cut with an ellipsis, its exit status beside it.
      await last.locator('.tool-command').evaluate((e) => ((e as HTMLDetailsElement).open = false));
      await last.scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(SCREENS, `cards-command-closed-${width}-${scheme}.png`) });
      await last.locator('.tool-command').evaluate((e) => ((e as HTMLDetailsElement).open = true));
    }
  }

  await page.setViewportSize({ width: 390, height: 844 });
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
    const violations = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(context: Element, options: object): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
      const result = await axe.run(document.querySelector('.message-list')!, { resultTypes: ['violations'] });
      return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
    });
    assert.deepEqual(violations, [], `axe, ${scheme}: the cards`);
  }
  assert.deepEqual(phone.errors, []);
  await phone.close();
});

test("attack: a model's tool arguments carrying markup are shown as text in the card's words and command row", async () => {
  const markup = '<img src=x onerror="window.__pwned = 1">';
  rig.fake.script(
    { tool_calls: [{ name: 'read_file', arguments: { path: `${markup}.ts` } }] },
    { tool_calls: [{ name: 'run_command', arguments: { command: `echo ${markup}` } }] },
    { text: 'Tried.' },
  );
  const phone = await rig.openPhone();
  const { page } = phone;
  await page.locator('.composer-input').fill('try the markup');
  await page.locator('.composer-input').press('Enter');
  await page.locator('.message.assistant', { hasText: 'Tried.' }).waitFor();
  const read = page.locator('.tool-card[data-tool="read_file"]').last();
  assert.equal(await words(read), `Read ${markup}.ts`, 'the path as text');
  const command = page.locator('.tool-card[data-tool="run_command"]').last();
  await command.locator('.tool-status:not([data-status="running"])').waitFor();
  assert.match(await words(command), /^Ran echo <img src=x onerror=/, 'the command as text');
  assert.equal(await page.locator('.tool-card img').count(), 0, 'no element made of the arguments');
  assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, 'nothing ran');
  await phone.close();
});
