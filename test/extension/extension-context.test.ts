// Issue 14, "Give it the editor's context", the extension's half: "Ask Remote Assistant" on a selection
// reveals the chat view with a chip holding the selected lines; the active file is offered as a chip
// (attached or not by the setting); `#file` mentions complete from the workspace (files.exclude and
// .gitignore honoured) and give a file's chip; a chat the view sends with the chips' context reaches
// the provider. The whole extension runs with the `vscode` double over the real service.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, serveStatic, type StaticServer } from '../helpers/browser';
import { MAX_CONTEXT_CHARS } from '../../src/protocol';
import { extensionHarness } from '../helpers/extension-harness';
import { tempDir, waitFor } from '../helpers/temp';
import { Position, Selection, testing, Uri, workspace, type FakeWebviewView } from '../helpers/vscode-double';
import { withoutNote } from '../helpers/service-note';

const harness = extensionHarness();
const cleanups = harness.cleanups;

const MATH = '// math\n\nexport function add(a: number, b: number) {\n  return a + b;\n}\n';

/** A window over a workspace folder holding a few files (and some VS Code or git would hide). */
async function activateWindow(settings: Record<string, unknown> = {}) {
  const ws = await tempDir('ra-ext-ctx-ws-');
  harness.cleanups.push(ws.cleanup);
  await mkdir(join(ws.dir, 'src'), { recursive: true });
  await mkdir(join(ws.dir, 'node_modules', 'mathlib'), { recursive: true });
  await mkdir(join(ws.dir, 'out'), { recursive: true });
  await writeFile(join(ws.dir, 'src', 'math.ts'), MATH);
  await writeFile(join(ws.dir, 'src', 'format.ts'), 'export const format = String;\n');
  await writeFile(join(ws.dir, 'node_modules', 'mathlib', 'math.js'), 'ignored by .gitignore');
  await writeFile(join(ws.dir, 'out', 'math.js'), 'hidden by files.exclude');
  await writeFile(join(ws.dir, 'math.log'), 'ignored by .gitignore');
  await writeFile(join(ws.dir, '.gitignore'), '# build output\nnode_modules/\n*.log\n');
  const { api, dataDir } = await harness.activate({}, settings);
  testing.settings.set('files.exclude', { '**/out': true, '**/.git': true });
  testing.workspaceFolders = [{ uri: Uri.file(ws.dir), name: 'ws', index: 0 }];
  return { api, workspace: ws.dir, dataDir };
}

/** An editor on a workspace file with lines `from`..`to` (1-based) selected. */
async function editorOn(file: string, from?: number, to?: number) {
  const document = await workspace.openTextDocument(Uri.file(file));
  const selection = from === undefined ? new Selection(new Position(0, 0), new Position(0, 0)) : new Selection(new Position(from - 1, 0), new Position(to! - 1, document.lineAt(to! - 1).text.length));
  return { document, selection };
}

const posted = (view: FakeWebviewView) => view.webview.posted as Record<string, any>[];
const eventsOf = (view: FakeWebviewView, name: string) =>
  posted(view)
    .filter((m) => m.kind === 'event' && m.event.event === name)
    .map((m) => m.event);

async function openReadyView() {
  const view = await testing.openView('remoteAssistant.chat');
  view.webview.fromUi({ kind: 'ready' });
  await waitFor(() => posted(view).some((m) => m.kind === 'state' && m.state === 'running'), 'the view to be told the service runs');
  return view;
}

/** Asks the extension as the webview does, and waits for the answer. */
async function lookup(view: FakeWebviewView, id: string, question: Record<string, string>) {
  view.webview.fromUi({ kind: 'lookup', id, lookup: question });
  return (await waitFor(() => posted(view).find((m) => m.kind === 'lookup_result' && m.id === id), `lookup ${id}`)).result;
}

describe("the editor's context", () => {
  test('Ask Remote Assistant on a selection reveals the chat with a chip of the selected lines; the chat sent with it gives the provider that text', async () => {
    const { workspace: ws } = await activateWindow();
    const view = await openReadyView();
    testing.setActiveEditor(await editorOn(join(ws, 'src', 'math.ts'), 3, 5));
    await testing.commands.get('remoteAssistant.askSelection')!();
    assert.ok(
      testing.executed.some((e) => e.command === 'remoteAssistant.chat.focus'),
      'the chat view is revealed',
    );
    // Posted with what else the view is sent in this task (TickBatch): at the loop's next turn.
    const added = await waitFor(() => eventsOf(view, 'editor.add_context')[0], 'the chip');
    const selected = 'export function add(a: number, b: number) {\n  return a + b;\n}';
    assert.deepEqual(added?.item, { kind: 'selection', path: 'src/math.ts', range: { start_line: 3, end_line: 5 }, text: selected });

    // The view sends what its chips show (as the chat page does), and the provider receives it.
    const before = harness.fake.requests.length;
    view.webview.fromUi({ kind: 'frame', frame: { type: 'chat', id: 'ask-1', message: 'Explain this', context: [added.item] } });
    const reply = await waitFor(() => posted(view).find((m) => m.kind === 'response' && m.envelope.id === 'ask-1'), 'the chat reply', 30_000);
    assert.equal(reply.envelope.status, 'ok', JSON.stringify(reply.envelope));
    const user = withoutNote((harness.fake.requests[before]!.body as { messages: { role: string; content: string }[] }).messages)
      .filter((m) => m.role === 'user')
      .at(-1)!;
    assert.ok(user.content.includes(selected), user.content);
    assert.ok(user.content.includes('src/math.ts, lines 3-5'));
  });

  test('Ask before the chat view was ever opened: the chip reaches the view once it is ready', async () => {
    const { workspace: ws } = await activateWindow();
    testing.setActiveEditor(await editorOn(join(ws, 'src', 'math.ts'), 1, 1));
    await testing.commands.get('remoteAssistant.askSelection')!();
    const view = await openReadyView();
    const added = await waitFor(() => eventsOf(view, 'editor.add_context')[0], 'the chip');
    assert.deepEqual(added.item, { kind: 'selection', path: 'src/math.ts', range: { start_line: 1, end_line: 1 }, text: '// math' });
  });

  test('Ask with nothing selected attaches the whole file', async () => {
    const { workspace: ws } = await activateWindow();
    const view = await openReadyView();
    testing.setActiveEditor(await editorOn(join(ws, 'src', 'math.ts')));
    await testing.commands.get('remoteAssistant.askSelection')!();
    const added = await waitFor(() => eventsOf(view, 'editor.add_context')[0], 'the chip');
    assert.deepEqual(added.item, { kind: 'file', path: 'src/math.ts', text: MATH });
  });

  test('Ask on a selection larger than the limit says so and adds no chip', async () => {
    const { workspace: ws } = await activateWindow();
    const view = await openReadyView();
    await writeFile(join(ws, 'big.txt'), `${'x'.repeat(MAX_CONTEXT_CHARS)}\nmore\n`);
    testing.setActiveEditor(await editorOn(join(ws, 'big.txt'), 1, 2));
    await testing.commands.get('remoteAssistant.askSelection')!();
    const warning = testing.messages.find((m) => m.kind === 'warning');
    assert.match(warning?.message ?? '', new RegExp(`big\\.txt holds ${MAX_CONTEXT_CHARS + 5} characters; at most ${MAX_CONTEXT_CHARS}`));
    assert.deepEqual(eventsOf(view, 'editor.add_context'), []);
  });

  test("the active file is offered as a chip, attached by default; the setting off offers it unattached; it follows the active editor; never the service's own files", async () => {
    const { workspace: ws, dataDir } = await activateWindow();
    testing.setActiveEditor(await editorOn(join(ws, 'src', 'math.ts')));
    const view = await openReadyView();
    const first = await waitFor(() => eventsOf(view, 'editor.active_file').at(-1), 'the active file');
    assert.deepEqual(first, { event: 'editor.active_file', item: { kind: 'file', path: 'src/math.ts', text: MATH }, attach: true });
    testing.setActiveEditor(await editorOn(join(ws, 'src', 'format.ts')));
    await waitFor(() => eventsOf(view, 'editor.active_file').at(-1)?.item?.path === 'src/format.ts', 'the switch');
    testing.setActiveEditor(undefined);
    await waitFor(() => eventsOf(view, 'editor.active_file').at(-1)?.item === null, 'no editor: no chip');

    // The service's own files (service.json holds the access token) are never offered.
    testing.setActiveEditor(await editorOn(join(dataDir, 'service.json')));
    await waitFor(() => eventsOf(view, 'editor.active_file').length >= 4, 'the switch to service.json');
    assert.equal(eventsOf(view, 'editor.active_file').at(-1)?.item, null);

    // Nor a document that is not a file (the proposed side of Show Diff, a git or output view): it is not the user's file.
    testing.setActiveEditor(await editorOn(join(ws, 'src', 'format.ts')));
    await waitFor(() => eventsOf(view, 'editor.active_file').at(-1)?.item?.path === 'src/format.ts', 'back to a file');
    const proposed = { uri: Uri.from({ scheme: 'remote-assistant-proposed', path: '/2/hello.txt' }), getText: () => 'proposed text', lineCount: 1, lineAt: () => ({ text: 'proposed text' }) };
    testing.setActiveEditor({ document: proposed, selection: new Selection(new Position(0, 0), new Position(0, 0)) });
    await waitFor(() => eventsOf(view, 'editor.active_file').length >= 6, 'the switch to the diff view');
    assert.equal(eventsOf(view, 'editor.active_file').at(-1)?.item, null);

    testing.setSetting('remoteAssistant.attachActiveFile', false);
    testing.setActiveEditor(await editorOn(join(ws, 'src', 'math.ts')));
    await waitFor(() => eventsOf(view, 'editor.active_file').at(-1)?.attach === false, 'offered, not attached');
  });

  test('#file completion lists workspace files matching what was typed, without files.exclude or .gitignore matches; a pick gives the file as a chip; a path outside the workspace is refused', async () => {
    const { workspace: ws } = await activateWindow();
    const view = await openReadyView();
    const math = await lookup(view, 'q1', { files: 'math' });
    assert.deepEqual(math, { files: ['src/math.ts'] }, 'node_modules/, *.log (.gitignore) and out/ (files.exclude) are left out');
    const all = await lookup(view, 'q2', { files: '' });
    assert.deepEqual([...all.files].sort(), ['.gitignore', 'src/format.ts', 'src/math.ts']);
    const picked = await lookup(view, 'q3', { file: 'src/math.ts' });
    assert.deepEqual(picked, { item: { kind: 'file', path: 'src/math.ts', text: MATH } });
    const outside = await lookup(view, 'q4', { file: '../elsewhere.txt' });
    assert.match(outside.error, /outside|workspace/i);
    void ws;
  });
});

describe("the chat view's chips, in a browser (the real page: media/chat-webview.js after `node esbuild.mjs`)", () => {
  let browser: Browser;
  let site: StaticServer;
  before(async () => {
    browser = await launchChromium();
    site = await serveStatic(resolve('media'));
  });
  after(async () => {
    await browser?.close();
    await site?.close();
  });

  /** The chat page in Chromium, joined to the extension's view as VS Code joins a webview: postMessage both ways. */
  async function openPage(view: FakeWebviewView): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width: 420, height: 700 } });
    cleanups.push(() => page.close());
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.exposeFunction('toHost', (json: string) => view.webview.fromUi(JSON.parse(json)));
    view.webview.onPost = (message) => void page.evaluate((data) => window.dispatchEvent(new MessageEvent('message', { data })), message).catch(() => undefined);
    await page.setContent(
      `<!doctype html><html><head><link rel="stylesheet" href="${site.url}/chat.css"></head><body><div id="app"></div>` +
        `<script>window.acquireVsCodeApi = () => ({ postMessage: (m) => window.toHost(JSON.stringify(m)), getState: () => undefined, setState: () => undefined });</script>` +
        `<script src="${site.url}/chat-webview.js"></script></body></html>`,
    );
    await page.waitForFunction(() => !(document.querySelector('.composer-input') as HTMLTextAreaElement | null)?.disabled);
    return { page, errors };
  }

  const chipTexts = (page: Page) => page.locator('.context-chips:not(.sent) .chip-label').allInnerTexts();

  test('Ask shows the chip; #file completes and adds one; the active file chip detaches; the provider receives exactly the chips shown, and the sent message keeps them', async () => {
    const { workspace: ws } = await activateWindow();
    testing.setActiveEditor(await editorOn(join(ws, 'src', 'math.ts')));
    const view = await testing.openView('remoteAssistant.chat');
    const { page, errors } = await openPage(view);

    const active = page.locator('.chip.active-file');
    await active.waitFor();
    assert.equal(await active.getAttribute('aria-pressed'), 'true', "the active file starts attached (the setting's default)");
    assert.match(await active.innerText(), /math\.ts/);

    testing.setActiveEditor(await editorOn(join(ws, 'src', 'math.ts'), 3, 5));
    await testing.commands.get('remoteAssistant.askSelection')!();
    await page.locator('.chip[data-kind="selection"]').waitFor();
    assert.deepEqual(await chipTexts(page), ['math.ts:3-5', 'math.ts']);

    const input = page.locator('.composer-input');
    await input.click();
    await input.pressSequentially('Compare with #form');
    const option = page.locator('.mention-list .mention');
    await option.first().waitFor();
    assert.deepEqual(await option.allInnerTexts(), ['src/format.ts']);
    await input.press('Enter');
    await page.waitForFunction(() => document.querySelectorAll('.context-chips:not(.sent) .chip').length === 3);
    assert.equal(await input.inputValue(), 'Compare with #src/format.ts ', 'Enter picked the file; nothing was sent');
    assert.deepEqual(await chipTexts(page), ['math.ts:3-5', 'format.ts', 'math.ts']);

    await active.click();
    assert.equal(await active.getAttribute('aria-pressed'), 'false', 'detached by a click');
    await page.screenshot({ path: join(await screenshots(), 'editor-context-chips.png') });

    const before = harness.fake.requests.length;
    await input.press('End');
    await input.pressSequentially('please');
    await input.press('Enter');
    await page.waitForFunction(() => (document.querySelector('.message.assistant:last-of-type')?.textContent ?? '').includes('echo:'));
    const user = withoutNote((harness.fake.requests[before]!.body as { messages: { role: string; content: string }[] }).messages)
      .filter((m) => m.role === 'user')
      .at(-1)!.content;
    assert.ok(user.includes('export function add(a: number, b: number) {\n  return a + b;\n}'), 'the selected lines');
    assert.ok(user.includes('[file] src/format.ts') && user.includes('export const format = String;'), 'the mentioned file');
    assert.ok(!user.includes('[file] src/math.ts'), 'not the detached active file');
    assert.ok(user.trimEnd().endsWith('Compare with #src/format.ts please'));

    assert.deepEqual(await page.locator('.message.user .context-chips.sent .chip').allInnerTexts(), ['math.ts:3-5', 'format.ts'], 'the sent message shows its chips');
    assert.deepEqual(await chipTexts(page), ['math.ts'], 'the chips added for it are gone; the active file stays, detached');
    assert.deepEqual(errors, []);
  });
});

async function screenshots(): Promise<string> {
  const dir = resolve('test-output/screenshots');
  await mkdir(dir, { recursive: true });
  return dir;
}
