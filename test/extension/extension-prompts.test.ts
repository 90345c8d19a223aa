// The editor's permission prompt's text and Show Diff over real tool previews (the prompt in a
// running extension: extension-permissions.test.ts), the vscode.lm provider and the editor tools, with the `vscode` double.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { ProviderError } from '../../src/agent/providers/types';
import { createBuiltinToolSource } from '../../src/agent/tools/builtin/index';
import { previewToolCall, wirePreview } from '../../src/agent/tools/preview';
import type { PermissionPreview } from '../../src/protocol';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { installVscodeDouble, testing, Uri, LanguageModelTextPart, LanguageModelToolCallPart, Selection, Position } from '../helpers/vscode-double';
import { TestClient } from '../helpers/ws-client';

installVscodeDouble();
let prompts: typeof import('../../src/extension/permission-prompt');
let lmModule: typeof import('../../src/extension/lm-provider');
let toolsModule: typeof import('../../src/extension/editor-tools');
let fake: FakeOpenAI;
const cleanups: (() => Promise<unknown>)[] = [];

before(async () => {
  prompts = await import('../../src/extension/permission-prompt');
  lmModule = await import('../../src/extension/lm-provider');
  toolsModule = await import('../../src/extension/editor-tools');
  fake = await startFakeOpenAI();
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fake.close();
});
beforeEach(() => testing.reset());

/** The preview the real tool gives for this call in `ws`, as permission.request carries it. */
async function realPreview(ws: string, tool: string, args: Record<string, unknown>) {
  const tools = await createBuiltinToolSource({ workspaceRoots: () => [ws] }).tools();
  return wirePreview(
    await previewToolCall(
      tools.find((t) => t.name === tool)!,
      args,
    ),
  );
}

function request(tool: string, args: Record<string, unknown>, preview?: PermissionPreview) {
  const times = { created_at: '2026-11-23T20:00:00.000Z', expires_at: '2026-11-23T20:30:00.000Z' };
  return { request_id: 'r', conversation_id: 'c1', conversation_title: 'a chat', source: 'ws', tool, arguments: args, ...times, ...(preview ? { preview } : {}) };
}

describe('permission prompt (the notification text and Show Diff)', () => {
  test("Show Diff opens vscode.diff of the current file and the text the tool's own preview leaves (CRLF kept)", async () => {
    const ws = await tempDir('ra-prompt-');
    cleanups.push(ws.cleanup);
    await writeFile(join(ws.dir, 'a.txt'), 'old text\n');
    await writeFile(join(ws.dir, 'win.txt'), 'one\r\ntwo\r\n');
    const proposed = new prompts.ProposedContent();
    const cases: [Record<string, unknown>, string][] = [
      [{ path: 'a.txt', old_string: 'old', new_string: 'new' }, 'new text\n'],
      // The model writes \n; edit_file matches the file's \r\n and writes \r\n: the diff shows that, not a guess.
      [{ path: 'win.txt', old_string: 'one\ntwo', new_string: 'one\n2' }, 'one\r\n2\r\n'],
    ];
    for (const [args, expected] of cases) {
      testing.reset();
      await prompts.showRequestDiff(request('edit_file', args, await realPreview(ws.dir, 'edit_file', args)), [ws.dir], proposed);
      const diff = testing.executed.find((e) => e.command === 'vscode.diff')!;
      const [left, right] = diff.args as [Uri, Uri];
      assert.equal(left.fsPath, join(ws.dir, String(args.path)));
      assert.equal(proposed.provideTextDocumentContent(right as never), expected);
    }
    // A new file: empty on the left.
    testing.reset();
    const args = { path: 'fresh.txt', content: 'hello\n' };
    await prompts.showRequestDiff(request('write_file', args, await realPreview(ws.dir, 'write_file', args)), [ws.dir], proposed);
    const [left, right] = testing.executed.find((e) => e.command === 'vscode.diff')!.args as [Uri, Uri];
    assert.equal(proposed.provideTextDocumentContent(left as never), '');
    assert.equal(proposed.provideTextDocumentContent(right as never), 'hello\n');
  });

  test('an edit the tool would refuse (old_string not unique) has no diff and says why', async () => {
    const ws = await tempDir('ra-prompt-');
    cleanups.push(ws.cleanup);
    await writeFile(join(ws.dir, 'dup.txt'), 'x\nx\n');
    const args = { path: 'dup.txt', old_string: 'x', new_string: 'y' };
    const req = request('edit_file', args, await realPreview(ws.dir, 'edit_file', args));
    assert.match(prompts.describeRequest(req), /would fail: old_string matches 2 places/);
    await assert.rejects(prompts.showRequestDiff(req, [ws.dir], new prompts.ProposedContent()), /no diff/);
  });

  test('a command shows its line, folder and first warning; text from the request can never form a link', async () => {
    const ws = await tempDir('ra-prompt-');
    cleanups.push(ws.cleanup);
    const args = { command: 'rm -rf build' };
    assert.match(prompts.describeRequest(request('run_command', args, await realPreview(ws.dir, 'run_command', args))), /^rm -rf build \(in \.\) ⚠ .*rm -rf/);
    const sneaky = { command: 'echo [Allow](command:workbench.action.terminal.sendSequence)' };
    const text = prompts.describeRequest(request('run_command', sneaky, await realPreview(ws.dir, 'run_command', sneaky)));
    assert.doesNotMatch(text, /\]\(/);
    // The editor's own links do form links, their arguments intact.
    const link = prompts.commandLink('Deny', 'x.answer', ["it's (odd)", 'deny']);
    const target = /^\[Deny\]\(command:([^)\s]+)\)$/.exec(link)?.[1];
    assert.ok(target, link);
    assert.deepEqual(JSON.parse(decodeURIComponent(target.split('?')[1])), ["it's (odd)", 'deny']);
  });
});

/**
 * A language model as vscode.lm hands it out: streams parts, honours the cancellation token. It counts
 * 10 tokens a message and a string's characters (countTokens), and its window is 4096 tokens.
 */
function fakeModel(id: string, parts: unknown[], seen: { messages?: unknown[]; options?: any; token?: any } = {}) {
  return {
    id,
    family: 'fam',
    name: id,
    maxInputTokens: 4096,
    async countTokens(what: unknown) {
      return typeof what === 'string' ? what.length : 10;
    },
    async sendRequest(messages: unknown[], options: unknown, token: { isCancellationRequested: boolean }) {
      Object.assign(seen, { messages, options, token });
      return {
        stream: (async function* () {
          for (const part of parts) {
            await new Promise((r) => setTimeout(r, 5));
            if (token.isCancellationRequested) throw new Error('cancelled by token');
            yield part;
          }
        })(),
      };
    },
  };
}

describe('vscode.lm provider', () => {
  test('streams text, returns tool calls, maps messages and tools', async () => {
    const seen: { messages?: any[]; options?: any } = {};
    testing.chatModels = [fakeModel('copilot-x', [new LanguageModelTextPart('Hel'), new LanguageModelTextPart('lo'), new LanguageModelToolCallPart('call1', 'read_file', { path: 'a' })], seen)];
    const provider = lmModule.createLanguageModelProvider();
    const deltas: string[] = [];
    const result = await provider.complete({
      model: 'copilot-x',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: '', tool_calls: [{ id: 't0', name: 'list_directory', arguments: {} }] },
        { role: 'tool', tool_call_id: 't0', name: 'list_directory', content: 'a.txt' },
      ],
      tools: [{ name: 'read_file', description: 'reads', parameters: { type: 'object', properties: {} } }],
      onDelta: (d) => deltas.push(d),
    });
    assert.equal(result.text, 'Hello');
    assert.deepEqual(deltas, ['Hel', 'lo']);
    assert.deepEqual(result.tool_calls, [{ id: 'call1', name: 'read_file', arguments: { path: 'a' } }]);
    assert.equal(result.finish_reason, 'tool_calls');
    assert.equal(seen.messages!.length, 4);
    assert.equal(seen.messages![0].role, 'user', 'no system role in vscode.lm');
    assert.equal(seen.options.tools[0].name, 'read_file');
    assert.deepEqual(await provider.listModels!(), ['copilot-x']);
  });

  test('an abort cancels the request token and rejects as cancelled; no model is not_configured', async () => {
    const seen: { token?: any } = {};
    testing.chatModels = [
      fakeModel(
        'm',
        Array.from({ length: 50 }, () => new LanguageModelTextPart('x')),
        seen,
      ),
    ];
    const provider = lmModule.createLanguageModelProvider();
    const controller = new AbortController();
    const running = provider.complete({ model: 'unknown-falls-back', messages: [{ role: 'user', content: 'go' }], signal: controller.signal, onDelta: () => undefined });
    setTimeout(() => controller.abort(), 30);
    await assert.rejects(running, (e: unknown) => e instanceof ProviderError && e.kind === 'cancelled');
    assert.equal(seen.token.isCancellationRequested, true);
    testing.chatModels = [];
    await assert.rejects(provider.complete({ model: 'x', messages: [{ role: 'user', content: 'go' }] }), (e: unknown) => e instanceof ProviderError && e.kind === 'not_configured');
  });

  test('the service chats through the editor models when provider is vscode', async () => {
    testing.chatModels = [fakeModel('m', [new LanguageModelTextPart('from the editor')])];
    const provider = lmModule.createLanguageModelProvider();
    const svc = await startService({ provider: 'vscode', model: 'm' }, { hostServices: { languageModels: () => provider } });
    cleanups.push(() => svc.dispose());
    const phone = await TestClient.authed(svc.wsUrl, svc.token);
    cleanups.push(async () => phone.close());
    const reply = await phone.request({ type: 'chat', message: 'hi', stream: true });
    assert.equal((reply.data as { response: string }).response, 'from the editor');
  });

  test("an editor model reports no usage: its tokens are counted with the model's countTokens, marked estimated, its window is maxInputTokens", async () => {
    const seen: { messages?: unknown[] } = {};
    testing.chatModels = [fakeModel('m', [new LanguageModelTextPart('from the editor')], seen)];
    const provider = lmModule.createLanguageModelProvider();
    const svc = await startService({ provider: 'vscode', model: 'm' }, { hostServices: { languageModels: () => provider } });
    cleanups.push(() => svc.dispose());
    const phone = await TestClient.authed(svc.wsUrl, svc.token);
    cleanups.push(async () => phone.close());
    const reply = await phone.request({ type: 'chat', message: 'hi' });
    const history = await phone.request({ type: 'get_messages', conversation_id: (reply.data as { conversation_id: string }).conversation_id });
    const usage = (history.data as { messages: { usage?: Record<string, unknown> }[] }).messages.at(-1)!.usage;
    assert.deepEqual(usage, {
      provider: 'vscode',
      model: 'm',
      input_tokens: 10 * seen.messages!.length,
      output_tokens: 'from the editor'.length,
      cached_tokens: 0,
      cost: null,
      estimated: true,
      calls: 1,
      context_used: 10 * seen.messages!.length,
      context_window: 4096,
    });
  });
});

describe('editor tools', () => {
  test('get_selection, open_file and get_diagnostics', async () => {
    const ws = await tempDir('ra-tools-');
    cleanups.push(ws.cleanup);
    await mkdir(join(ws.dir, 'src'));
    await writeFile(join(ws.dir, 'src', 'a.ts'), 'one\ntwo\nthree\n');
    testing.workspaceFolders = [{ uri: Uri.file(ws.dir), name: 'ws', index: 0 }];
    const source = toolsModule.createEditorToolSource(() => [ws.dir]);
    const tools = new Map((await source.tools()).map((t) => [t.name, t]));
    const ctx = { conversationId: 'c', signal: new AbortController().signal };
    assert.equal((await tools.get('get_selection')!.run({}, ctx)).content, 'no active editor');
    const doc = { uri: Uri.file(join(ws.dir, 'src', 'a.ts')), getText: () => 'two' };
    const vscodeDouble = await import('../helpers/vscode-double');
    vscodeDouble.window.activeTextEditor = { document: doc, selection: new Selection(new Position(1, 0), new Position(1, 3)) };
    assert.equal((await tools.get('get_selection')!.run({}, ctx)).content, 'src/a.ts:2-2\ntwo');
    vscodeDouble.window.activeTextEditor = undefined;
    assert.match((await tools.get('open_file')!.run({ path: 'src/a.ts', start_line: 2, end_line: 3 }, ctx)).content, /opened src\/a.ts at line 2/);
    await assert.rejects(tools.get('open_file')!.run({ path: 'missing.ts' }, ctx), /cannot open missing.ts/);
    assert.equal((await tools.get('get_diagnostics')!.run({}, ctx)).content, 'no problems');
    assert.deepEqual(tools.get('open_file')!.parameters, { path: 'string', start_line: 'integer', end_line: 'integer' });
  });
});

describe('editor tools stay inside the workspace', () => {
  // open_file selects the line range it reveals and get_selection returns the selected text: with a
  // path outside the workspace the two read any file the editor can open (~/.ssh, the service's
  // service.json), past the confinement of read_file.
  test('open_file and get_diagnostics refuse paths outside the workspace, so get_selection cannot read them', async () => {
    const base = await tempDir('ra-editor-out-');
    cleanups.push(base.cleanup);
    const ws = join(base.dir, 'ws');
    await mkdir(ws);
    await writeFile(join(ws, 'inside.txt'), 'inside\n');
    await writeFile(join(base.dir, 'secret.txt'), 'top secret\n');
    testing.workspaceFolders = [{ uri: Uri.file(ws), name: 'ws', index: 0 }];
    const source = toolsModule.createEditorToolSource(() => [ws]);
    const tools = new Map((await source.tools()).map((t) => [t.name, t]));
    const ctx = { conversationId: 'c', signal: new AbortController().signal };
    const vscodeDouble = await import('../helpers/vscode-double');
    for (const path of [join(base.dir, 'secret.txt'), '../secret.txt']) {
      vscodeDouble.window.activeTextEditor = undefined;
      const opened = await tools
        .get('open_file')!
        .run({ path, start_line: 1, end_line: 2 }, ctx)
        .then(
          (output) => output.content,
          (error: unknown) => `refused: ${(error as Error).message}`,
        );
      assert.match(opened, /^refused: .*outside the workspace/, path);
      const selected = (await tools.get('get_selection')!.run({}, ctx)).content;
      assert.doesNotMatch(selected, /top secret/, path);
      await assert.rejects(tools.get('get_diagnostics')!.run({ path }, ctx), /outside the workspace/);
    }
    // Inside, both still work together.
    await tools.get('open_file')!.run({ path: 'inside.txt', start_line: 1, end_line: 2 }, ctx);
    assert.match((await tools.get('get_selection')!.run({}, ctx)).content, /inside/);
    vscodeDouble.window.activeTextEditor = undefined;
  });
});

describe('run_command in a visible terminal', () => {
  const ctx = () => ({ conversationId: 'c', signal: new AbortController().signal });

  async function setup() {
    const ws = await tempDir('ra-terminal-');
    cleanups.push(ws.cleanup);
    const { createTerminalRunner } = await import('../../src/extension/terminal-command');
    const { terminalRunCommand } = await import('../../src/agent/tools/terminal-run-command');
    const { runCommandTool } = await import('../../src/agent/tools/builtin/run-command');
    const roots = () => [ws.dir];
    return { dir: ws.dir, tool: terminalRunCommand(runCommandTool(roots), roots, createTerminalRunner({ shellIntegrationWaitMs: 200 })) };
  }

  /** What the tool card shows of a command that ended well (the result's detail, never sent to the model). */
  const EXITED_0 = { kind: 'command', exit_code: 0, timed_out: false };

  test('a command line runs in the "Remote Assistant" terminal, shown, with its output (escapes removed) and exit code; the idle terminal is reused', async () => {
    const { dir, tool } = await setup();
    const first = await tool.run({ command: 'echo from the terminal; pwd; exit 3' }, ctx());
    assert.equal(first.isError, true);
    assert.equal(first.content, `from the terminal\n${dir}\n[exit code 3]`);
    assert.equal(testing.terminals.length, 1);
    assert.equal(testing.terminals[0].name, 'Remote Assistant');
    assert.ok(testing.terminals[0].shown > 0);
    const second = await tool.run({ command: 'echo again' }, ctx());
    assert.deepEqual(second, { content: 'again\n[exit code 0]', isError: false, detail: EXITED_0 });
    assert.equal(testing.terminals.length, 1, 'the idle terminal in the same folder is reused');
    assert.deepEqual(testing.terminals[0].commandLines, ['echo from the terminal; pwd; exit 3', 'echo again']);
  });

  test('without shell integration, or for an argv command, the built-in hidden runner answers; paths outside the workspace are refused', async () => {
    const { tool } = await setup();
    testing.shellIntegration = false;
    assert.deepEqual(await tool.run({ command: 'echo hidden' }, ctx()), { content: 'hidden\n[exit code 0]', isError: false, detail: EXITED_0 });
    assert.equal(testing.terminals[0].exitStatus !== undefined, true, 'the terminal without integration is closed');
    testing.shellIntegration = true;
    const before = testing.terminals.length;
    assert.deepEqual(await tool.run({ command: ['echo', 'argv'] }, ctx()), { content: 'argv\n[exit code 0]', isError: false, detail: EXITED_0 });
    assert.equal(testing.terminals.length, before, 'an argv command never opens a terminal');
    await assert.rejects(tool.run({ command: 'ls', cwd: '../..' }, ctx()), /outside|workspace/);
  });

  test('cancelling the chat interrupts the command in the terminal (Ctrl-C)', async () => {
    const { tool } = await setup();
    const controller = new AbortController();
    const running = tool.run({ command: 'echo started; exec sleep 30' }, { conversationId: 'c', signal: controller.signal });
    await waitFor(() => testing.terminals[0]?.commandLines.length === 1, 'the command to start');
    controller.abort();
    const result = await running;
    assert.equal(result.isError, true);
    assert.match(result.content, /cancelled/);
    assert.deepEqual(testing.terminals[0].sent, ['\x03']);
  });

  test('closing the terminal ends the command (reported as killed), it is not waited for until the timeout', async () => {
    const { tool } = await setup();
    const running = tool.run({ command: 'echo started; exec sleep 30' }, ctx());
    await waitFor(() => testing.terminals[0]?.commandLines.length === 1, 'the command to start');
    testing.terminals[0].dispose();
    const result = await running;
    assert.equal(result.isError, true);
    assert.match(result.content, /killed by signal SIGHUP/);
  });
});
