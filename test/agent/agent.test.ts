import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { TurnEvent } from '../../src/agent/agent';
import type { Provider } from '../../src/agent/providers/types';
import { startFakeAnthropic } from '../helpers/fake-anthropic';
import { type RecordedRequest } from '../helpers/fake-openai';
import { stackTraceText } from '../helpers/provider-test-kit';
import { TEST_API_KEY } from '../helpers/service';
import { useFakeProvider, type ServiceWithFake, type StartOptions } from '../helpers/service-fixture';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

const rig = useFakeProvider({ workspace: true });

function service(config: Record<string, unknown> = {}, options: StartOptions = {}): Promise<ServiceWithFake> {
  return rig.start({ permission_mode: 'allow', ...config }, { permissionTimeoutMs: 1_500, toolTimeoutMs: 2_000, ...options });
}

/** The last tool-result message the model was sent in a request. */
function toolResultsIn(request: RecordedRequest): string[] {
  return (request.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);
}

const chatId = (reply: Record<string, unknown>) => (reply.data as { conversation_id: string }).conversation_id;

describe('the tool loop', () => {
  test('a two-step tool chain: write, then read, then answer; events streamed and tool messages stored', async () => {
    const svc = await service();
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script(
      { tool_calls: [{ id: 'c1', name: 'write_file', arguments: { path: 'notes/a.txt', content: 'forty-two' } }] },
      { tool_calls: [{ id: 'c2', name: 'read_file', arguments: { path: 'notes/a.txt' } }] },
      (request) => ({ text: `the file says: ${toolResultsIn(request).at(-1)}` }),
    );
    const reply = await client.request({ type: 'chat', message: 'write then read', id: 't1' });
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    assert.match((reply.data as { response: string }).response, /the file says: .*forty-two/);
    assert.equal(await readFile(join(rig.workspace, 'notes/a.txt'), 'utf8'), 'forty-two');

    const events = client.frames.filter((f) => f.id === 't1' && String(f.event).startsWith('tool.'));
    assert.deepEqual(
      events.map((e) => [e.event, e.tool]),
      [
        ['tool.call', 'write_file'],
        ['tool.result', 'write_file'],
        ['tool.call', 'read_file'],
        ['tool.result', 'read_file'],
      ],
    );
    assert.ok(events.filter((e) => e.event === 'tool.result').every((e) => e.ok === true));

    const conversation_id = chatId(reply);
    const plain = (await client.request({ type: 'get_messages', conversation_id })).data as { messages: { role: string }[] };
    assert.deepEqual(
      plain.messages.map((m) => m.role),
      ['user', 'assistant'],
    );
    const full = (await client.request({ type: 'get_messages', conversation_id, include_tools: true })).data as { messages: { role: string; tool_name?: string; tool_kind?: string; ok?: boolean }[] };
    assert.deepEqual(
      full.messages.map((m) => [m.role, m.tool_name ?? null, m.tool_kind ?? null, m.ok ?? null]),
      [
        ['user', null, null, null],
        ['tool', 'write_file', 'call', null],
        ['tool', 'write_file', 'result', true],
        ['tool', 'read_file', 'call', null],
        ['tool', 'read_file', 'result', true],
        ['assistant', null, null, null],
      ],
    );

    // The next turn replays the tool traffic to the model in the provider's format.
    await client.request({ type: 'chat', message: 'thanks', conversation_id });
    const replayed = rig.fake.requests.at(-1)!.body.messages as { role: string; tool_calls?: unknown[]; tool_call_id?: string }[];
    assert.deepEqual(
      replayed.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'user', 'user'],
      "the last: the turn's note",
    );
    assert.equal(replayed[3].tool_call_id, 'c1');
    client.close();
  });

  test('list_tools lists the built-in tools with parameters as type names', async () => {
    const svc = await service();
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const tools = ((await client.request({ type: 'list_tools' })).data as { tools: { name: string; description: string; parameters: Record<string, string> }[] }).tools;
    const names = tools.map((t) => t.name);
    for (const name of ['read_file', 'write_file', 'edit_file', 'list_directory', 'search_files', 'run_command', 'remember', 'recall', 'forget']) assert.ok(names.includes(name), name);
    const read = tools.find((t) => t.name === 'read_file')!;
    assert.equal(read.parameters.path, 'string');
    assert.ok(read.description.length > 10);
    for (const tool of tools) for (const type of Object.values(tool.parameters)) assert.equal(typeof type, 'string');
    client.close();
  });

  test('max_steps bounds the loop', async () => {
    const svc = await service({ max_steps: 2 });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { tool_calls: [{ name: 'list_directory', arguments: {} }] });
    const before = rig.fake.requests.length;
    const reply = await client.request({ type: 'chat', message: 'loop forever' });
    assert.equal(reply.status, 'ok');
    assert.equal(rig.fake.requests.length - before, 2, 'two model calls, no more');
    assert.equal(rig.fake.requests.at(-1)!.body.tools, undefined, 'the last step offers no tools');
    client.close();
  });
});

describe('permissions', () => {
  test('deny: the tool never runs, the model is told, the chat still answers', async () => {
    const svc = await service({ permission_mode: 'deny' });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'denied.txt', content: 'x' } }] }, (request) => ({ text: `ok: ${toolResultsIn(request).at(-1)}` }));
    const reply = await client.request({ type: 'chat', message: 'try to write', id: 'd1' });
    assert.match((reply.data as { response: string }).response, /Permission denied/);
    assert.equal(existsSync(join(rig.workspace, 'denied.txt')), false);
    assert.equal(client.frames.find((f) => f.event === 'tool.result' && f.id === 'd1')?.ok, false);
    const stored = (await client.request({ type: 'get_messages', conversation_id: chatId(reply), include_tools: true })).data as { messages: { tool_kind?: string; ok?: boolean }[] };
    assert.equal(stored.messages.find((m) => m.tool_kind === 'result')?.ok, false, 'a denied call is stored as not ok');
    client.close();
  });

  test('ask: the client is asked; allow runs, deny does not; no answer in time denies', async () => {
    const svc = await service({ permission_mode: 'ask' });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    for (const [answer, file, expectRun] of [
      ['allow', 'ask-allow.txt', true],
      ['deny', 'ask-deny.txt', false],
      [undefined, 'ask-timeout.txt', false],
    ] as const) {
      rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: file, content: 'y' } }] }, { text: 'done' });
      client.send({ type: 'chat', message: `write ${file}`, id: file });
      const request = await client.next((f) => f.event === 'permission.request');
      assert.equal(request.tool, 'write_file');
      assert.deepEqual(request.arguments, { path: file, content: 'y' });
      if (answer) {
        const ack = await client.request({ type: 'permission_response', request_id: request.request_id, decision: answer });
        assert.equal(ack.status, 'ok');
      }
      const resolved = await client.next((f) => f.event === 'permission.resolved' && f.request_id === request.request_id);
      assert.equal(resolved.decision, answer ?? 'deny');
      await client.next((f) => f.id === file && 'status' in f);
      assert.equal(existsSync(join(rig.workspace, file)), expectRun, file);
    }
    const late = await client.request({ type: 'permission_response', request_id: 'gone', decision: 'allow' });
    assert.equal(late.code, 'not_found');
    client.close();
  });

  test("a turn's events come in the order the agent made them: a permission.request never overtakes its tool.call", async () => {
    const svc = await service({ permission_mode: 'ask' });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'order.txt', content: 'o' } }] }, { text: 'written' });
    client.send({ type: 'chat', message: 'write order.txt', id: 'o1', stream: true });
    while (!client.frames.some((f) => f.event === 'permission.request')) await new Promise((r) => setTimeout(r, 5));
    const request = client.frames.find((f) => f.event === 'permission.request')!;
    await client.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow' });
    await client.next((f) => f.id === 'o1' && 'status' in f);
    const order = client.frames.filter((f) => f.id === 'o1' || f.event === 'permission.request').map((f) => f.event);
    // chat.message: the user's stored message starts the turn (the reply's comes last, after the pieces).
    assert.deepEqual([...new Set(order)], ['chat.message', 'tool.call', 'permission.request', 'tool.result', 'chat.delta']);
    assert.equal(order.at(-1), 'chat.message');
    client.close();

    // The agent itself: one typed sink, every event of the turn in order, each naming the conversation.
    rig.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'listed' });
    const events: TurnEvent[] = [];
    const output = await svc.service.agent.chat({ message: 'list', source: { kind: 'lan' }, stream: true }, (event) => events.push(event));
    assert.equal(output.response, 'listed');
    assert.deepEqual([...new Set(events.map((e) => e.event))], ['chat.message', 'tool.call', 'tool.result', 'chat.delta']);
    assert.equal(events.at(-1)?.event, 'chat.message');
    assert.ok(events.every((e) => e.conversation_id === output.conversation_id));
    assert.equal(
      events
        .filter((e) => e.event === 'chat.delta')
        .map((e) => (e as { delta: string }).delta)
        .join(''),
      'listed',
    );
  });

  test('allow_conversation: asked once per tool for the rest of the conversation', async () => {
    const svc = await service({ permission_mode: 'ask' });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'first' });
    client.send({ type: 'chat', message: 'list', id: 's1' });
    const request = await client.next((f) => f.event === 'permission.request');
    await client.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow_conversation' });
    const first = await client.next((f) => f.id === 's1' && 'status' in f);
    rig.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'second' });
    const second = await client.request({ type: 'chat', message: 'list again', conversation_id: chatId(first) });
    assert.equal((second.data as { response: string }).response, 'second');
    assert.equal(client.frames.filter((f) => f.event === 'permission.request').length, 0, 'not asked again');
    client.close();
  });

  test('allow_session, the old name, is still read as allow_conversation; answers and events say the new name', async () => {
    const svc = await service({ permission_mode: 'ask' });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'first' });
    client.send({ type: 'chat', message: 'list', id: 'old1' });
    const request = await client.next((f) => f.event === 'permission.request');
    const answer = await client.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow_session' });
    assert.equal(answer.status, 'ok', JSON.stringify(answer));
    assert.equal((answer.data as { decision: string }).decision, 'allow_conversation');
    const resolved = await client.next((f) => f.event === 'permission.resolved' && f.request_id === request.request_id);
    assert.equal(resolved.decision, 'allow_conversation');
    const again = await client.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow_session' });
    assert.deepEqual(
      { status: again.status, decision: (again.data as { decision: string }).decision, already: (again.data as { already_decided: boolean }).already_decided },
      { status: 'ok', decision: 'allow_conversation', already: true },
      'the old name repeated is the same decision',
    );
    const first = await client.next((f) => f.id === 'old1' && 'status' in f);
    rig.fake.script({ tool_calls: [{ name: 'list_directory', arguments: {} }] }, { text: 'second' });
    const second = await client.request({ type: 'chat', message: 'list again', conversation_id: chatId(first) });
    assert.equal((second.data as { response: string }).response, 'second');
    assert.equal(client.frames.filter((f) => f.event === 'permission.request').length, 0, 'allowed for the conversation: not asked again');
    client.close();
  });

  test('a permission_mode change applies to the next tool call of a running chat', async () => {
    const svc = await service({ permission_mode: 'allow' });
    const chatter = await TestClient.authed(svc.wsUrl, svc.token);
    const admin = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script(
      { tool_calls: [{ name: 'write_file', arguments: { path: 'mode-1.txt', content: '1' } }] },
      { tool_calls: [{ name: 'write_file', arguments: { path: 'mode-2.txt', content: '2' } }], delayMs: 400 },
      { text: 'finished' },
    );
    chatter.send({ type: 'chat', message: 'two writes', id: 'm1' });
    await chatter.next((f) => f.event === 'tool.result' && f.id === 'm1');
    assert.equal((await admin.request({ type: 'update_config', config: { permission_mode: 'deny' } })).status, 'ok');
    await chatter.next((f) => f.id === 'm1' && 'status' in f);
    assert.equal(existsSync(join(rig.workspace, 'mode-1.txt')), true);
    assert.equal(existsSync(join(rig.workspace, 'mode-2.txt')), false, 'the second call was denied');
    chatter.close();
    admin.close();
  });

  test('permission_rules: deny rules win over the mode, allow rules over ask', async () => {
    const svc = await service({ permission_mode: 'ask', permission_rules: { allow: ['list_directory', 'run_command:echo *'], deny: ['run_command:rm *'] } });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    await writeFile(join(rig.workspace, 'keep.txt'), 'keep');
    rig.fake.script(
      { tool_calls: [{ name: 'list_directory', arguments: {} }] },
      { tool_calls: [{ name: 'run_command', arguments: { command: 'echo hello-rules' } }] },
      { tool_calls: [{ name: 'run_command', arguments: { command: 'rm keep.txt' } }] },
      (request) => ({ text: toolResultsIn(request).join(' | ') }),
    );
    const reply = await client.request({ type: 'chat', message: 'rules' });
    const text = (reply.data as { response: string }).response;
    assert.match(text, /hello-rules/);
    assert.match(text, /Permission denied/);
    assert.equal(existsSync(join(rig.workspace, 'keep.txt')), true);
    assert.equal(client.frames.filter((f) => f.event === 'permission.request').length, 0, 'rules decided without asking');
    client.close();
  });
});

describe('tool faults', () => {
  test('a tool that fails and a tool that hangs give error results, and the chat answers', async () => {
    const svc = await service({
      tools: [
        { name: 'broken', description: 'always fails', command: ['/nonexistent/binary'] },
        { name: 'sleepy', description: 'hangs', command: ['sleep', '30'], timeout_seconds: 60 },
      ],
    });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script(
      {
        tool_calls: [
          { name: 'broken', arguments: {} },
          { name: 'sleepy', arguments: {} },
        ],
      },
      (request) => ({ text: toolResultsIn(request).join(' | ') }),
    );
    // sleepy sleeps 30 s, past the request's 20 s: an answer at all means the loop's timeout stopped it.
    const reply = await client.request({ type: 'chat', message: 'faults', id: 'f1' }, 20_000);
    assert.equal(reply.status, 'ok');
    const text = (reply.data as { response: string }).response;
    assert.match(text, /within 2 s|timed out|did not finish/i);
    const results = client.frames.filter((f) => f.event === 'tool.result' && f.id === 'f1');
    assert.deepEqual(
      results.map((r) => r.ok),
      [false, false],
    );
    client.close();
  });

  test('custom tool arguments cannot inject commands', async () => {
    const svc = await service({ tools: [{ name: 'say', description: 'prints text', parameters: { text: 'string' }, command: ['printf', '%s', '{text}'] }] });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const attacks = ['; touch PWNED1', '$(touch PWNED2)', '`touch PWNED3`', '&& touch PWNED4', 'x\ntouch PWNED5'];
    rig.fake.script({ tool_calls: attacks.map((text) => ({ name: 'say', arguments: { text } })) }, (request) => ({ text: toolResultsIn(request).join('|') }));
    const reply = await client.request({ type: 'chat', message: 'inject' });
    const text = (reply.data as { response: string }).response;
    for (const attack of attacks) assert.ok(text.includes(attack), `printed literally: ${attack}`);
    for (let i = 1; i <= 5; i += 1) assert.equal(existsSync(join(rig.workspace, `PWNED${i}`)), false);
    client.close();
  });

  test('path escapes are refused', async () => {
    const svc = await service();
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script(
      {
        tool_calls: [
          { name: 'read_file', arguments: { path: '../../etc/passwd' } },
          { name: 'read_file', arguments: { path: '/etc/passwd' } },
        ],
      },
      (request) => ({ text: toolResultsIn(request).join('|') }),
    );
    const text = ((await client.request({ type: 'chat', message: 'escape' })).data as { response: string }).response;
    assert.ok(!text.includes('root:'), 'no content of /etc/passwd');
    assert.match(text, /outside the workspace/);
    client.close();
  });
});

describe('memory, cancel and providers', () => {
  test('memory remembered in one conversation is recalled in another', async () => {
    const svc = await service();
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script({ tool_calls: [{ name: 'remember', arguments: { content: 'the deploy key lives in vault path ops/deploy' } }] }, { text: 'noted' });
    await client.request({ type: 'chat', message: 'remember this' });
    rig.fake.script({ tool_calls: [{ name: 'recall', arguments: { query: 'deploy key' } }] }, (request) => ({ text: toolResultsIn(request).join('|') }));
    const reply = await client.request({ type: 'chat', message: 'where is the deploy key?' });
    assert.match((reply.data as { response: string }).response, /vault path ops\/deploy/);
    client.close();
  });

  test('cancel mid-stream: the chat answers cancelled, the user message is kept, no partial reply stored', async () => {
    const svc = await service();
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const start = await client.request({ type: 'chat', message: 'hello' });
    const conversation_id = chatId(start);
    rig.fake.script({ text: 'a b c d e f g h i j', chunks: 10, chunkDelayMs: 300 });
    client.send({ type: 'chat', message: 'long answer please', conversation_id, stream: true, id: 'long' });
    await client.next((f) => f.event === 'chat.delta' && f.id === 'long');
    client.send({ type: 'cancel', id: 'long' });
    // Two answers carry the id: the cancel's acknowledgement and the chat's final response.
    const answers = [await client.next((f) => f.id === 'long' && 'status' in f), await client.next((f) => f.id === 'long' && 'status' in f)];
    const ack = answers.find((a) => !('response' in (a.data as object)))!;
    const final = answers.find((a) => 'response' in (a.data as object))!;
    assert.deepEqual(ack.data, { cancelled: true });
    assert.equal((final.data as { cancelled: boolean }).cancelled, true);
    assert.ok((final.data as { response: string }).response.length < 'a b c d e f g h i j'.length, 'the reply was cut short');
    const messages = ((await client.request({ type: 'get_messages', conversation_id })).data as { messages: { role: string; content: string }[] }).messages;
    assert.deepEqual(
      messages.map((m) => m.role),
      ['user', 'assistant', 'user'],
    );
    assert.equal(messages.at(-1)!.content, 'long answer please');
    await rig.fake.waitFor((requests) => requests.some((r) => r.aborted));
    client.close();
  });

  test('provider 500 twice then success: the chat succeeds', async () => {
    const svc = await service();
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script({ status: 500 }, { status: 500 }, { text: 'third time lucky' });
    const reply = await client.request({ type: 'chat', message: 'flaky' }, 20_000);
    assert.equal((reply.data as { response: string }).response, 'third time lucky');
    client.close();
  });

  test('a provider 400 holding a stack trace: the client error names provider, status and first sentence; the log keeps the raw text, redacted', async () => {
    const svc = await service();
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    rig.fake.script({ status: 400, body: { error: { message: stackTraceText(TEST_API_KEY) } } });
    const reply = await client.request({ type: 'chat', message: 'fail with a stack' });
    assert.equal(reply.status, 'error');
    assert.equal(reply.error, 'openai: request rejected (HTTP 400): Internal failure in the router.');
    assert.doesNotMatch(String(reply.error), /\sat\s|\/srv\/|\.js:\d/);
    const log = await readFile(join(svc.dataDir, 'service.log'), 'utf8');
    assert.match(log, /at handle \(\/srv\/gateway\/app\/router\.js:42:13\)/, 'the raw text is in the log');
    assert.ok(!log.includes(TEST_API_KEY), 'the key is not in the log');
    client.close();
  });

  test('anthropic: a streamed tool chain in the Messages API format', async (t) => {
    const anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-test-key-abcdef123456' });
    t.after(() => anthropic.close());
    const svc = await service({ provider: 'anthropic', base_url: anthropic.url, api_key: 'sk-ant-test-key-abcdef123456', model: 'claude-fake-2', system_prompt: 'be brief' });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    await writeFile(join(rig.workspace, 'anthropic.txt'), 'from disk');
    anthropic.script({ tool_uses: [{ id: 'toolu_1', name: 'read_file', input: { path: 'anthropic.txt' } }] }, (request) => {
      const last = withoutNote(request.body.messages as { role: string }[]).at(-1) as unknown as { role: string; content: { type: string; content?: unknown }[] };
      const result = last.content.find((block) => block.type === 'tool_result');
      return { text: `read: ${JSON.stringify(result?.content)}`, chunks: 4 };
    });
    const reply = await client.request({ type: 'chat', message: 'read it', stream: true, id: 'an' });
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    assert.match((reply.data as { response: string }).response, /from disk/);
    assert.ok(client.frames.some((f) => f.event === 'chat.delta' && f.id === 'an'));
    const second = anthropic.requests.at(-1)!.body as { system: unknown; messages: { role: string; content: string | { type: string }[] }[] };
    assert.match(JSON.stringify(second.system), /be brief/);
    const blocks = (content: string | { type: string }[]) => (typeof content === 'string' ? 'text' : content.map((b) => b.type).join(','));
    assert.deepEqual(
      second.messages.map((m) => [m.role, blocks(m.content)]),
      [
        ['user', 'text'],
        ['assistant', 'tool_use'],
        ['user', 'tool_result,text'],
      ],
      "the turn's note comes last",
    );
    // The prompt cache: Anthropic caches only what is marked. The system prompt (with the tools before it)
    // and the conversation up to the turn's note are; the note, which changes each turn, is not.
    const first = anthropic.requests.at(-2)!.body as typeof second;
    for (const body of [first, second])
      assert.deepEqual(
        (body.system as { cache_control?: unknown }[]).map((b) => b.cache_control),
        [{ type: 'ephemeral' }],
      );
    const marked = (body: typeof second) => body.messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content)).filter((b) => 'cache_control' in b);
    assert.deepEqual(
      marked(first).map((b) => b.type),
      ['text'],
      "the first request: the user's message",
    );
    assert.deepEqual(
      marked(second).map((b) => b.type),
      ['tool_result'],
      'the second: the tool result, the last block before the note',
    );
    assert.match(JSON.stringify(first.messages[0]), /read it/);
    const note = (second.messages.at(-1)!.content as { type: string; text?: string }[]).at(-1)!;
    assert.ok(note.text?.startsWith('# Now') && !('cache_control' in note), 'the note: last, unmarked');
    client.close();
  });

  test('the vscode provider comes from the Host', async () => {
    const seen: string[] = [];
    const editorModels: Provider = {
      name: 'vscode',
      complete: async (request) => {
        const last = withoutNote(request.messages).at(-1)!;
        seen.push(last.content);
        request.onDelta?.('from the editor');
        return { text: 'from the editor', tool_calls: [], finish_reason: 'stop' };
      },
    };
    const svc = await service({ provider: 'vscode' }, { hostServices: { languageModels: () => editorModels } });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const reply = await client.request({ type: 'chat', message: 'via vscode.lm' });
    assert.equal((reply.data as { response: string }).response, 'from the editor');
    assert.deepEqual(seen, ['via vscode.lm']);
    client.close();
    const headless = await service({ provider: 'vscode' });
    const other = await TestClient.authed(headless.wsUrl, headless.token);
    const refused = await other.request({ type: 'chat', message: 'x' });
    assert.equal(refused.code, 'server_error');
    assert.match(String(refused.error), /only available .* VS Code/);
    other.close();
  });
});

describe('MCP tools through the service', () => {
  test('an MCP server is listed as <server>.<tool> and called', async () => {
    const serverScript = join(__dirname, '..', 'helpers', 'mcp-server.mjs');
    const svc = await service({ mcp_servers: { calc: { command: process.execPath, args: [serverScript] } } });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const tools = ((await client.request({ type: 'list_tools' })).data as { tools: { name: string; parameters: Record<string, string> }[] }).tools;
    const add = tools.find((t) => t.name === 'calc.add');
    assert.ok(add, `calc.add listed among ${tools.map((t) => t.name).join(', ')}`);
    assert.equal(add.parameters.a, 'number');
    rig.fake.script(
      (request) => {
        const name = (request.body.tools as { function: { name: string } }[]).map((t) => t.function.name).find((n) => n.includes('add'))!;
        return { tool_calls: [{ name, arguments: { a: 2, b: 40 } }] };
      },
      (request) => ({ text: `sum ${toolResultsIn(request).at(-1)}` }),
    );
    const reply = await client.request({ type: 'chat', message: 'add', id: 'mcp' });
    assert.match((reply.data as { response: string }).response, /sum .*42/);
    assert.equal(client.frames.find((f) => f.event === 'tool.call' && f.id === 'mcp')?.tool, 'calc.add');
    client.close();
  });
});
