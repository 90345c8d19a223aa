// Issue 11, the editor's part: it asks in one place. The whole extension is activated with the
// `vscode` double over the real service (temp dirs, loopback); a LAN socket with the access token
// stands in for the phone.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { unifiedDiff } from '../../src/agent/tools/unified-diff';
import { extensionHarness } from '../helpers/extension-harness';
import type { RecordedRequest } from '../helpers/fake-http';
import { TEST_TOKEN } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { testing, Uri, type FakeWebviewView } from '../helpers/vscode-double';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

const harness = extensionHarness();
const cleanups = harness.cleanups;

/** A window in `ask` mode over a workspace folder: fresh global storage, the double reset, activate() run. */
async function activateWindow() {
  const ws = await tempDir('ra-ext-perm-ws-');
  cleanups.push(ws.cleanup);
  const { api, dataDir, port } = await harness.activate({ permission_mode: 'ask', workspace: ws.dir });
  const phone = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, TEST_TOKEN);
  cleanups.push(async () => phone.close());
  return { api, phone, workspace: ws.dir, dataDir };
}

const posted = (view: FakeWebviewView) => view.webview.posted as Record<string, any>[];
const hasToolResult = (request: RecordedRequest) => withoutNote((request.body as { messages?: { role: string }[] }).messages ?? []).at(-1)?.role === 'tool';
/** One model turn: the tool call, then (with its result) the answer. */
function toolThenText(name: string, args: Record<string, unknown>, done: string) {
  const round = (request: RecordedRequest) => (hasToolResult(request) ? { text: done } : { tool_calls: [{ name, arguments: args }] });
  harness.fake.script(round, round);
}
/** The item showing how many requests wait (not the port/mode item). */
const pendingItem = () => testing.statusBarItems.find((i) => i.id === 'remoteAssistant.pending');
/** `[label](command:id?args)` links of a notification message, by label. */
function linksOf(message: string): Map<string, { command: string; args: unknown[] }> {
  const links = new Map<string, { command: string; args: unknown[] }>();
  for (const [, label, target] of message.matchAll(/\[([^\]]+)\]\(command:([^)\s]+)\)/g)) {
    const [command, query] = target.split('?');
    links.set(label, { command, args: query ? JSON.parse(decodeURIComponent(query)) : [] });
  }
  return links;
}
const dialogs = () => testing.messages.filter((m) => m.kind === 'warning' || (m.options as { modal?: boolean } | undefined)?.modal);

describe('the editor asks in one place', () => {
  test('a request asked from the phone (a LAN client) opens no dialog and no notification; the status bar counts it and clears when the phone answers', async () => {
    const { phone } = await activateWindow();
    toolThenText('list_directory', {}, 'listed');
    const chat = phone.request({ type: 'chat', message: 'list it' }, 20_000);
    const request = await phone.next((f) => f.event === 'permission.request');
    const item = await waitFor(() => (pendingItem()?.visible ? pendingItem() : undefined), 'the waiting count in the status bar');
    assert.equal(item.text, '$(bell-dot) 1');
    assert.match(String(item.tooltip), /1 permission request waits/);
    assert.equal(item.backgroundColor?.id, 'statusBarItem.warningBackground', 'it catches the eye');
    assert.deepEqual(dialogs(), [], 'no dialog for a request the phone asked');
    assert.equal(testing.progress.length, 0, 'no notification for a request the phone asked');
    phone.send({ type: 'permission_response', request_id: request.request_id, decision: 'allow' });
    assert.equal(((await chat).data as { response: string }).response, 'listed');
    await waitFor(() => pendingItem()?.visible === false, 'the count to go once answered');
  });

  test("this window's own chat with the chat view visible: the card is the prompt, no dialog, no notification", async () => {
    const { phone } = await activateWindow();
    const view = await testing.openView('remoteAssistant.chat');
    view.webview.fromUi({ kind: 'ready' });
    toolThenText('list_directory', {}, 'listed here');
    view.webview.fromUi({ kind: 'frame', frame: { type: 'chat', id: 'v-1', message: 'list it', stream: true } });
    const card = await waitFor(() => posted(view).find((m) => m.kind === 'event' && m.event.event === 'permission.request'), 'the card in the view');
    await waitFor(() => pendingItem()?.visible, 'the count');
    assert.deepEqual(dialogs(), []);
    assert.equal(testing.progress.length, 0, 'no notification while the view shows the card');
    // The card answers (as the webview does, through its own channel).
    view.webview.fromUi({ kind: 'frame', frame: { type: 'permission_response', id: 'a-1', request_id: card.event.request_id, decision: 'allow' } });
    const reply = await waitFor(() => posted(view).find((m) => m.kind === 'response' && m.envelope.id === 'v-1'), 'the chat reply', 30_000);
    assert.equal(reply.envelope.data.response, 'listed here');
    void phone;
  });

  test("this window's own chat with the chat view hidden: a notification offers Allow / Deny / Show in Chat / Show Diff links and closes when the phone answers", async () => {
    const { phone, workspace } = await activateWindow();
    const view = await testing.openView('remoteAssistant.chat');
    view.webview.fromUi({ kind: 'ready' });
    view.setVisible(false);

    // 1. Answered on the phone: the notification's task settles, so VS Code closes it.
    toolThenText('write_file', { path: 'a.txt', content: 'new text\n' }, 'written');
    view.webview.fromUi({ kind: 'frame', frame: { type: 'chat', id: 'h-1', message: 'write it', stream: true } });
    const toast = await waitFor(() => testing.progress.at(-1), 'a notification');
    assert.equal(toast.done, false);
    assert.match(String(toast.options.title), /write_file/);
    const message = await waitFor(() => toast.messages.at(-1), 'the notification message');
    assert.match(message, /a\.txt/);
    const links = linksOf(message);
    assert.deepEqual([...links.keys()], ['Allow', 'Allow for Conversation', 'Deny', 'Show in Chat', 'Show Diff']);
    assert.deepEqual(dialogs(), []);
    const request = await phone.next((f) => f.event === 'permission.request');
    phone.send({ type: 'permission_response', request_id: request.request_id, decision: 'allow' });
    await waitFor(() => toast.done, 'the notification to close once the phone answered');
    await waitFor(() => posted(view).find((m) => m.kind === 'response' && m.envelope.id === 'h-1'), 'the chat reply', 30_000);
    assert.equal(await readFile(join(workspace, 'a.txt'), 'utf8'), 'new text\n');

    // 2. Answered from the notification's own link: the decision goes to the service, the notification closes.
    toolThenText('write_file', { path: 'b.txt', content: 'no\n' }, 'not written');
    view.webview.fromUi({ kind: 'frame', frame: { type: 'chat', id: 'h-2', message: 'write another', stream: true } });
    const second = await waitFor(() => (testing.progress.length === 2 ? testing.progress[1] : undefined), 'a second notification');
    const deny = linksOf(await waitFor(() => second.messages.at(-1), 'its message')).get('Deny')!;
    await testing.commands.get(deny.command)!(...deny.args);
    await waitFor(() => second.done, 'the notification to close once answered');
    const reply = await waitFor(() => posted(view).find((m) => m.kind === 'response' && m.envelope.id === 'h-2'), 'the chat reply', 30_000);
    assert.equal(reply.envelope.data.response, 'not written');
    const result = await waitFor(() => posted(view).find((m) => m.kind === 'event' && m.event.event === 'tool.result' && m.event.id === 'h-2'), 'the tool result');
    assert.equal(result.event.denied, true);

    // 3. Its Cancel button (or closing it) denies: dismissing never lets the call run.
    toolThenText('write_file', { path: 'c.txt', content: 'no\n' }, 'cancelled');
    view.webview.fromUi({ kind: 'frame', frame: { type: 'chat', id: 'h-c', message: 'write a third', stream: true } });
    const cancellable = await waitFor(() => (testing.progress.length === 3 ? testing.progress[2] : undefined), 'a notification to cancel');
    assert.equal(cancellable.options.cancellable, true);
    cancellable.cancel();
    await waitFor(() => cancellable.done, 'the notification to close once cancelled');
    const cancelledResult = await waitFor(() => posted(view).find((m) => m.kind === 'event' && m.event.event === 'tool.result' && m.event.id === 'h-c'), 'the tool result');
    assert.equal(cancelledResult.event.denied, true);
    await waitFor(() => posted(view).find((m) => m.kind === 'response' && m.envelope.id === 'h-c'), 'the chat reply', 30_000);

    // 4. The view comes back while one waits: the card is the prompt again, the notification goes.
    toolThenText('list_directory', {}, 'ok');
    view.webview.fromUi({ kind: 'frame', frame: { type: 'chat', id: 'h-3', message: 'list', stream: true } });
    const third = await waitFor(() => (testing.progress.length === 4 ? testing.progress[3] : undefined), 'a fourth notification');
    view.setVisible(true);
    await waitFor(() => third.done, 'the notification to close when the view is visible');
    const waiting = await phone.next((f) => f.event === 'permission.request' && f.tool === 'list_directory');
    phone.send({ type: 'permission_response', request_id: waiting.request_id, decision: 'allow' });
    await waitFor(() => posted(view).find((m) => m.kind === 'response' && m.envelope.id === 'h-3'), 'the chat reply', 30_000);
  });

  test('clicking the waiting count opens the chat on the first waiting request', async () => {
    const { phone } = await activateWindow();
    const view = await testing.openView('remoteAssistant.chat');
    toolThenText('list_directory', {}, 'listed');
    const chat = phone.request({ type: 'chat', message: 'list it' }, 20_000);
    const request = await phone.next((f) => f.event === 'permission.request');
    const item = await waitFor(() => (pendingItem()?.visible ? pendingItem() : undefined), 'the count');
    await testing.commands.get(item.command)!();
    assert.ok(
      testing.executed.some((e) => e.command === 'remoteAssistant.chat.focus'),
      'the chat view is focused',
    );
    const shown = await waitFor(() => posted(view).find((m) => m.kind === 'event' && m.event.event === 'editor.show_request'), 'the view told which request');
    assert.deepEqual(shown.event, { event: 'editor.show_request', request_id: request.request_id, conversation_id: request.conversation_id });
    phone.send({ type: 'permission_response', request_id: request.request_id, decision: 'deny' });
    await chat;
  });

  test("Show Diff from the chat card opens VS Code's diff: the file as it is, and as the write would leave it", async () => {
    const { phone, workspace } = await activateWindow();
    await writeFile(join(workspace, 'notes.txt'), 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n');
    const view = await testing.openView('remoteAssistant.chat');
    toolThenText('edit_file', { path: 'notes.txt', old_string: 'six', new_string: 'SIX' }, 'edited');
    view.webview.fromUi({ kind: 'frame', frame: { type: 'chat', id: 'd-1', message: 'edit it', stream: true } });
    const card = await waitFor(() => posted(view).find((m) => m.kind === 'event' && m.event.event === 'permission.request'), 'the card');
    assert.equal(card.event.preview.kind, 'diff');
    view.webview.fromUi({ kind: 'action', action: 'showDiff', argument: card.event.request_id });
    const diff = await waitFor(() => testing.executed.find((e) => e.command === 'vscode.diff'), 'vscode.diff');
    const [left, right, title] = diff.args as [Uri, Uri, string];
    assert.equal(left.fsPath, join(workspace, 'notes.txt'));
    assert.equal(await testing.contentProviders.get(right.scheme)!.provideTextDocumentContent(right), 'one\ntwo\nthree\nfour\nfive\nSIX\nseven\neight\n');
    assert.match(title, /notes\.txt.*edit_file/);
    phone.send({ type: 'permission_response', request_id: card.event.request_id, decision: 'deny' });
    await waitFor(() => posted(view).find((m) => m.kind === 'response' && m.envelope.id === 'd-1'), 'the chat reply', 30_000);
  });
});

describe('undo a turn in the editor', () => {
  /** A turn of the phone's that writes `files` (path -> content) one call each, then answers. */
  async function writingTurn(phone: TestClient, files: Record<string, string>) {
    assert.equal((await phone.request({ type: 'update_config', config: { permission_mode: 'allow' } })).status, 'ok');
    harness.fake.script(...Object.entries(files).map(([path, content]) => ({ tool_calls: [{ name: 'write_file', arguments: { path, content } }] })), { text: 'written' });
    const reply = await phone.request({ type: 'chat', message: 'write the files' }, 20_000);
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    const conversationId = (reply.data as { conversation_id: string }).conversation_id;
    const messages = (await phone.request({ type: 'get_messages', conversation_id: conversationId })).data as { messages: { id: string; role: string }[] };
    return { conversationId, replyId: messages.messages.filter((m) => m.role === 'assistant').at(-1)!.id };
  }

  test('Undo a Turn (palette): pick the conversation and the turn, see the diffs, confirm; a file changed since is left alone and named', async () => {
    const { phone, workspace } = await activateWindow();
    await writeFile(join(workspace, 'edited.txt'), 'before\n');
    await writingTurn(phone, { 'edited.txt': 'by the turn\n', 'created.txt': 'new\n' });
    await writeFile(join(workspace, 'edited.txt'), 'by the user\n');
    testing.answers.quickPick.push((items: { label: string }[]) => items.find((i) => i.label === 'write the files'));
    testing.answers.quickPick.push((items: { label: string }[]) => items[0]);
    testing.answers.warning.push('Restore 1 File');
    await testing.commands.get('remoteAssistant.undoTurn')!();
    const diff = testing.executed.find((e) => e.command === 'vscode.diff')!;
    const [left, right] = diff.args as [Uri, Uri];
    assert.equal(left.fsPath, join(workspace, 'created.txt'), 'the file as it is now');
    assert.equal(await testing.contentProviders.get(right.scheme)!.provideTextDocumentContent(right), '', 'and as undo leaves it (deleted)');
    assert.ok(
      testing.messages.some((m) => /changed since the turn.*edited\.txt/s.test(m.message)),
      'the file changed since is named',
    );
    assert.ok(
      testing.messages.some((m) => /Undo this turn\? created\.txt \(delete\)/.test(m.message)),
      'the confirmation names what will happen',
    );
    assert.match(testing.messages.at(-1)!.message, /created\.txt deleted/);
    assert.equal(await readFile(join(workspace, 'edited.txt'), 'utf8'), 'by the user\n');
    await assert.rejects(readFile(join(workspace, 'created.txt')));
  });

  test("the chat view's three-way view of a file changed since the turn: before <-> now and the turn's result <-> now", async () => {
    const { phone, workspace } = await activateWindow();
    await writeFile(join(workspace, 'three.txt'), 'before\n');
    const { conversationId, replyId } = await writingTurn(phone, { 'three.txt': 'by the turn\n' });
    await writeFile(join(workspace, 'three.txt'), 'by the user\n');
    const view = await testing.openView('remoteAssistant.chat');
    view.webview.fromUi({ kind: 'action', action: 'showUndoThreeWay', argument: JSON.stringify({ conversation_id: conversationId, message_id: replyId, path: 'three.txt' }) });
    await waitFor(() => testing.executed.filter((e) => e.command === 'vscode.diff').length === 2, 'two diff editors');
    const diffs = testing.executed.filter((e) => e.command === 'vscode.diff').map((e) => e.args as [Uri, Uri, string]);
    const text = (uri: Uri) => testing.contentProviders.get(uri.scheme)!.provideTextDocumentContent(uri);
    assert.deepEqual(await Promise.all(diffs.map(([left]) => text(left))), ['before\n', 'by the turn\n']);
    assert.deepEqual(
      diffs.map(([, right]) => right.fsPath),
      [join(workspace, 'three.txt'), join(workspace, 'three.txt')],
    );
    assert.match(diffs[0][2], /three\.txt.*before the turn/);
  });
});

describe('every window hears the waiting requests', () => {
  test('the hosting window and an attached one both count a request the phone asked; the attached one answers it, both counts clear', async () => {
    const { Hosting } = await import('../../src/extension/hosting');
    const { PendingPermissions } = await import('../../src/extension/pending-permissions');
    const { answerRequest } = await import('../../src/extension/permission-prompt');
    const storage = await tempDir('ra-ext-perm-windows-');
    cleanups.push(storage.cleanup);
    await writeFile(join(storage.dir, 'service.json'), JSON.stringify({ auth_token: TEST_TOKEN, base_url: harness.fake.url, model: 'fake-model', permission_mode: 'ask' }));
    const window = () => {
      const hosting = new Hosting({ dataDir: storage.dir, port: () => 0, bindHost: '127.0.0.1', hostServices: {}, log: () => undefined, retry: { initialMs: 50, maxMs: 300 } });
      const pending = new PendingPermissions();
      hosting.on('backend', (backend) => pending.setBackend(backend));
      cleanups.push(async () => {
        pending.dispose();
        await hosting.stop();
      });
      return { hosting, pending };
    };
    const host = window();
    await host.hosting.start();
    const attached = window();
    await attached.hosting.start();
    assert.equal(host.hosting.state.state, 'hosting');
    assert.equal(attached.hosting.state.state, 'client');
    const phone = await TestClient.authed(`ws://127.0.0.1:${(host.hosting.state as { port: number }).port}/ws`, TEST_TOKEN);
    cleanups.push(async () => phone.close());

    toolThenText('list_directory', {}, 'listed');
    const chat = phone.request({ type: 'chat', message: 'list it' }, 20_000);
    const request = await phone.next((f) => f.event === 'permission.request');
    await waitFor(() => host.pending.count === 1 && attached.pending.count === 1, 'both windows to count it');
    assert.equal(attached.pending.get(String(request.request_id))?.tool, 'list_directory');
    await answerRequest(attached.hosting.backend, String(request.request_id), 'allow');
    assert.equal(((await chat).data as { response: string }).response, 'listed');
    await waitFor(() => host.pending.count === 0 && attached.pending.count === 0, 'both counts to clear');
  });
});

describe('a late copy of an answered request', () => {
  // An attached window hears a request on its view's socket and on its own: the phone's answer can be
  // heard on the one before the request arrives on the other. A stand-in backend plays the two orders.
  test('never opens a notification that nothing would close', async () => {
    const { EventEmitter } = await import('node:events');
    const { PendingPermissions } = await import('../../src/extension/pending-permissions');
    const { EditorPrompts } = await import('../../src/extension/permission-prompt');
    testing.reset();
    const backend = Object.assign(new EventEmitter(), { request: async () => ({ status: 'error', code: 'invalid_request', error: 'unknown command' }) });
    const pending = new PendingPermissions();
    pending.setBackend(backend as never);
    const prompts = new EditorPrompts(
      pending,
      () => false,
      async () => undefined,
    );
    const request = {
      request_id: 'r-late',
      conversation_id: 'c',
      conversation_title: 'a chat',
      source: 'editor',
      tool: 'list_directory',
      arguments: {},
      created_at: '2026-11-23T20:00:00.000Z',
      expires_at: '2026-11-23T20:30:00.000Z',
    };
    backend.emit('event', { event: 'permission.resolved', request_id: 'r-late', decision: 'allow' });
    prompts.ownRequest(request);
    assert.equal(testing.progress.length, 0);
    // In the usual order it does open, and the answer closes it.
    prompts.ownRequest({ ...request, request_id: 'r-usual' });
    assert.equal(testing.progress.length, 1);
    backend.emit('event', { event: 'permission.resolved', request_id: 'r-usual', decision: 'deny' });
    await waitFor(() => testing.progress[0].done, 'the notification to close');
    prompts.dispose();
    pending.dispose();
  });
});

describe('a unified diff applied to the file it was made from', () => {
  test('gives back the text the tool would write (changes, CRLF, no newline at the end, new file, many hunks)', async () => {
    const { applyUnifiedDiff } = await import('../../src/extension/apply-diff');
    const long = Array.from({ length: 40 }, (_, i) => `line ${i}\n`).join('');
    const cases: [string | undefined, string][] = [
      ['a\nb\nc\n', 'a\nB\nc\n'],
      ['a\r\nb\r\n', 'a\r\nb changed\r\nc\r\n'],
      ['no newline', 'no newline\nnow two'],
      ['x\ny', 'x\ny\n'],
      [undefined, 'brand new\nfile\n'],
      ['keep\n', ''],
      [long, long.replace('line 2\n', 'line two\n').replace('line 30\n', '').concat('tail\n')],
    ];
    for (const [before, after] of cases) {
      assert.equal(applyUnifiedDiff(before ?? '', unifiedDiff('f.txt', before, after)), after, JSON.stringify([before, after]));
    }
  });

  test('refuses when the file no longer matches the diff (changed since the prompt)', async () => {
    const { applyUnifiedDiff } = await import('../../src/extension/apply-diff');
    const diff = unifiedDiff('f.txt', 'a\nb\nc\n', 'a\nB\nc\n');
    assert.throws(() => applyUnifiedDiff('a\nX\nc\n', diff), /changed/);
  });
});

/**
 * A stand-in of the backend for Send Test Notification: a real push needs a push service, which the
 * hosted service reaches only at public https addresses (test/service/push-notifications.test.ts
 * covers push_test against a fake one); here the command's report of each device's outcome is checked.
 */
function standInBackend(answers: Record<string, (frame: Record<string, any>) => unknown>) {
  const frames: Record<string, any>[] = [];
  return {
    frames,
    backend: {
      request: async (frame: Record<string, any>) => {
        frames.push(frame);
        const answer = answers[frame.type];
        if (!answer) return { status: 'error', code: 'invalid_request', error: `unknown command ${frame.type}` };
        try {
          return { status: 'ok', data: answer(frame) };
        } catch (error) {
          return { status: 'error', code: 'invalid_request', error: (error as Error).message };
        }
      },
      config: undefined,
    },
  };
}

describe('palette: Edit Permission Rules and Send Test Notification', () => {
  async function commandsWith(backend: unknown) {
    testing.reset();
    const palette = await import('../../src/extension/palette-commands');
    const deps = { hosting: { backend, state: { state: 'hosting', port: 1 } }, log: () => undefined } as never;
    return { palette, deps };
  }

  test('Edit Permission Rules lists allow and deny rules, removes one and adds one: service.json changes, through the hosted service', async () => {
    const { api, phone, dataDir } = await activateWindow();
    const service = api.hosting.service!;
    const file = join(dataDir, 'service.json');
    await writeFile(file, JSON.stringify({ ...JSON.parse(await readFile(file, 'utf8')), permission_rules: { allow: ['read_file', 'run_command:npm test'], deny: ['run_command:rm *'] } }));
    await waitFor(() => service.config.current.permission_rules.deny.length === 1, 'the service to read the rules');
    const fileRules = async () => JSON.parse(await readFile(join(dataDir, 'service.json'), 'utf8')).permission_rules;
    testing.answers.quickPick.push((items: { label: string; description?: string }[]) => {
      const labels = items.map((i) => i.label);
      assert.ok(labels.includes('read_file') && labels.includes('run_command:npm test') && labels.includes('run_command:rm *'), labels.join(' | '));
      return items.find((i) => i.label === 'run_command:npm test');
    });
    testing.answers.quickPick.push((items: { label: string }[]) => items.find((i) => /remove/i.test(i.label)));
    await testing.commands.get('remoteAssistant.editPermissionRules')!();
    assert.deepEqual(await fileRules(), { allow: ['read_file'], deny: ['run_command:rm *'] });

    testing.answers.quickPick.push((items: { label: string }[]) => items.find((i) => /add a deny rule/i.test(i.label)));
    testing.answers.inputBox.push((options: { validateInput: (v: string) => string | undefined }) => {
      assert.ok(options.validateInput('   '), 'an empty rule is refused');
      return 'write_file:secrets/*';
    });
    await testing.commands.get('remoteAssistant.editPermissionRules')!();
    assert.deepEqual(await fileRules(), { allow: ['read_file'], deny: ['run_command:rm *', 'write_file:secrets/*'] });
    // Every client hears of it, and reads the same rules.
    await phone.next((f) => f.event === 'config.changed' && (f.fields as string[]).includes('permission_rules'));
    const config = await phone.request({ type: 'get_config' });
    assert.deepEqual((config.data as { permission_rules: unknown }).permission_rules, { allow: ['read_file'], deny: ['run_command:rm *', 'write_file:secrets/*'] });
  });

  test('Manage Devices lists the paired phones and revokes the picked one: its socket closes 4401, the other stays', async () => {
    const { api, phone } = await activateWindow();
    const wsUrl = `ws://127.0.0.1:${(api.hosting.state as { port: number }).port}/ws`;
    const pair = async (device_id: string, device_name: string) => {
      const { pairing_secret } = (await phone.request({ type: 'create_lan_pairing' })).data as { pairing_secret: string };
      const client = await TestClient.connect(wsUrl);
      cleanups.push(async () => client.close());
      assert.equal((await client.request({ type: 'auth', pairing_secret, device_id, device_name })).status, 'ok');
      return client;
    };
    const lost = await pair('lost', 'Lost Pixel');
    const kept = await pair('kept', 'iPhone');
    testing.answers.quickPick.push((items: { label: string; description: string }[]) => {
      assert.deepEqual(
        items.map((i) => i.label),
        ['Lost Pixel', 'iPhone'],
      );
      assert.match(items[0].description, /LAN · notifications off/);
      return items[0];
    });
    testing.answers.warning.push('Revoke Lost Pixel');
    await testing.commands.get('remoteAssistant.manageDevices')!();
    assert.equal((await lost.waitClose()).code, 4401);
    assert.match(testing.messages.at(-1)!.message, /Lost Pixel revoked/);
    assert.equal((await kept.request({ type: 'list_conversations' })).status, 'ok');
    const listed = (await phone.request({ type: 'list_devices' })).data as { devices: { device_id: string }[] };
    assert.deepEqual(
      listed.devices.map((d) => d.device_id),
      ['kept'],
    );
  });

  test('Send Test Notification reports each device, and says so when no device is subscribed', async () => {
    let results: unknown[] = [];
    const stand = standInBackend({ push_test: () => ({ results }), list_push_devices: () => ({ devices: [] }) });
    const { palette, deps } = await commandsWith(stand.backend);
    await palette.sendTestNotification(deps);
    assert.match(testing.messages.at(-1)!.message, /no phone is subscribed/i);

    results = [
      { device_id: 'd1', ok: true, status: 201 },
      { device_id: 'd2', ok: false, status: 410, error: 'gone' },
    ];
    stand.backend.request = (async (frame: Record<string, any>) => {
      stand.frames.push(frame);
      if (frame.type === 'list_push_devices')
        return {
          status: 'ok',
          data: {
            devices: [
              { device_id: 'd1', device_name: 'Android Chrome' },
              { device_id: 'd2', device_name: 'iPhone Safari' },
            ],
          },
        };
      return { status: 'ok', data: { results } };
    }) as typeof stand.backend.request;
    await palette.sendTestNotification(deps);
    const shown = testing.messages.at(-1)!;
    assert.equal(shown.kind, 'warning');
    assert.match(shown.message, /Android Chrome: sent/);
    assert.match(shown.message, /iPhone Safari: failed \(410/);
  });
});
