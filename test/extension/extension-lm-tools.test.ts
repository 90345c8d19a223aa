// Issue 14: tools other extensions contribute to VS Code (vscode.lm.tools, MCP servers configured in
// VS Code included) are the agent's too when the service runs in the editor: listed (marked as from
// VS Code), offered to the model, and run with vscode.lm.invokeTool only behind the same permission
// gate as the agent's own tools. The whole extension runs with the `vscode` double over the real
// service (temp dirs, loopback); a LAN socket with the access token stands in for the phone.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { extensionHarness } from '../helpers/extension-harness';
import type { RecordedRequest } from '../helpers/fake-http';
import { TEST_TOKEN } from '../helpers/service';
import { LanguageModelTextPart, LanguageModelToolResult, testing } from '../helpers/vscode-double';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

const harness = extensionHarness();
const cleanups = harness.cleanups;

/** Another extension's tool, as vscode.lm.registerTool makes it known. */
const WORD_COUNT = {
  name: 'word_count',
  description: 'Counts the words of a text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  tags: [],
  invoke: (input: object) => new LanguageModelToolResult([new LanguageModelTextPart(`${String((input as { text: string }).text).split(/\s+/).length} words`)]),
};
/** One of VS Code's own tools for its chat (no schema, needs its chat session), as 1.100 lists them. */
const INTERNAL = { name: 'vscode_editFile_internal', description: '', tags: [], invoke: () => new LanguageModelToolResult([]) };
/** How the agent names it (list_tools, rules, prompts) and how the model is shown that name. */
const TOOL = 'vscode.word_count';
const MODEL_NAME = 'vscode_word_count';

async function activateWindow(config: Record<string, unknown>) {
  const { api, port } = await harness.activate(config);
  testing.lmTools.push(WORD_COUNT, INTERNAL);
  const phone = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, TEST_TOKEN);
  cleanups.push(async () => phone.close());
  return { api, phone, port };
}

const hasToolResult = (request: RecordedRequest) => withoutNote((request.body as { messages?: { role: string }[] }).messages ?? []).at(-1)?.role === 'tool';
/** The model calls the VS Code tool, then answers with what the tool returned. */
function callWordCount() {
  const round = (request: RecordedRequest) => {
    const messages = (request.body as { messages: { role: string; content: string }[] }).messages;
    return hasToolResult(request) ? { text: `tool said: ${withoutNote(messages).at(-1)!.content}` } : { tool_calls: [{ name: MODEL_NAME, arguments: { text: 'one two three' } }] };
  };
  harness.fake.script(round, round);
}

describe("VS Code's language model tools", () => {
  test('list_tools and List Tools show them, marked as from VS Code; the model is offered them', async () => {
    const { phone } = await activateWindow({ permission_mode: 'allow' });
    const listed = await phone.request({ type: 'list_tools' });
    const tools = (listed.data as { tools: { name: string; description: string; parameters: Record<string, string>; from?: string }[] }).tools;
    const tool = tools.find((t) => t.name === TOOL);
    assert.ok(tool, tools.map((t) => t.name).join(', '));
    assert.equal(tool.from, 'vscode');
    assert.equal(tool.description, WORD_COUNT.description);
    assert.deepEqual(tool.parameters, { text: 'string' });
    assert.equal(tools.find((t) => t.name === 'read_file')?.from, undefined, "the agent's own tools are not marked");
    assert.equal(
      tools.find((t) => t.name.endsWith('_internal')),
      undefined,
      "VS Code's own internal tools (for its chat only) are not offered",
    );

    await testing.commands.get('remoteAssistant.listTools')!();
    const items = testing.quickPicks.at(-1)!.items as { label: string; description: string }[];
    const item = items.find((i) => i.label === TOOL);
    assert.ok(item, items.map((i) => i.label).join(','));
    assert.match(item.description, /from VS Code/);

    const before = harness.fake.requests.length;
    await phone.request({ type: 'chat', message: 'hello' });
    const offered = (harness.fake.requests[before]!.body as { tools: { function: { name: string; parameters: unknown } }[] }).tools.find((t) => t.function.name === MODEL_NAME);
    assert.ok(offered, 'offered to the model under a provider-safe name');
    assert.deepEqual(offered.function.parameters, WORD_COUNT.inputSchema);
  });

  test('permission_mode deny: the tool is never invoked; the model is told it was denied', async () => {
    const { phone } = await activateWindow({ permission_mode: 'deny' });
    callWordCount();
    const reply = await phone.request({ type: 'chat', message: 'count' }, 20_000);
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    assert.deepEqual(testing.invokedTools, []);
    assert.match((reply.data as { response: string }).response, /tool said: Permission denied/);
  });

  test('a deny rule (vscode.*) turns them off in allow mode, like any other tool', async () => {
    const { phone } = await activateWindow({ permission_mode: 'allow', permission_rules: { allow: [], deny: ['vscode.*'] } });
    callWordCount();
    const reply = await phone.request({ type: 'chat', message: 'count' }, 20_000);
    assert.deepEqual(testing.invokedTools, []);
    assert.match((reply.data as { response: string }).response, /Permission denied/);
  });

  test('ask: the call waits for a person (permission.request to the phone); allowed, invokeTool runs it and its text is the tool result', async () => {
    const { phone } = await activateWindow({ permission_mode: 'ask' });
    callWordCount();
    const chat = phone.request({ type: 'chat', message: 'count' }, 20_000);
    const request = await phone.next((f) => f.event === 'permission.request');
    assert.equal(request.tool, TOOL);
    assert.deepEqual(request.arguments, { text: 'one two three' });
    assert.deepEqual(testing.invokedTools, [], 'nothing runs before the answer');
    phone.send({ type: 'permission_response', request_id: request.request_id, decision: 'allow' });
    const reply = await chat;
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    assert.deepEqual(testing.invokedTools, [{ name: 'word_count', input: { text: 'one two three' } }]);
    assert.equal((reply.data as { response: string }).response, 'tool said: 3 words');
  });

  test('a webhook account that did not opt in to tools never invokes them, even in allow mode', async () => {
    const { port } = await activateWindow({
      permission_mode: 'allow',
      channels: [
        { name: 'tcp', type: 'tcp', port: 0 },
        { name: 'hooks', type: 'webhook', accounts: { ci: { incoming_path: '/hook/ci', outgoing_url: 'http://127.0.0.1:9/never' } } },
      ],
    });
    callWordCount();
    const before = harness.fake.requests.length;
    const posted = await fetch(`http://127.0.0.1:${port}/hook/ci`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'count' }) });
    assert.equal(posted.status, 202);
    await harness.fake.waitFor((requests) => requests.slice(before).some(hasToolResult), 10_000);
    assert.deepEqual(testing.invokedTools, []);
    const toolMessage = withoutNote((harness.fake.requests.slice(before).find(hasToolResult)!.body as { messages: { role: string; content: string }[] }).messages).at(-1)!;
    assert.match(toolMessage.content, /not enabled for messages from this source/);
  });
});
