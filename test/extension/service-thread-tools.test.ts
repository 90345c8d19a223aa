// The editor's tool listing kept on the service's thread (src/service-thread/host-calls.ts, host-answers.ts):
// the agent lists its tools at every step, and the editor's two sources (its own tools, VS Code's lm tools)
// answer on the extension host's thread. They are listed across once and kept until the editor tells the
// thread their list may have changed ('tools-changed'). Real worker threads (from source), temp data
// directories, the fake model on loopback; the whole extension with the `vscode` double, or HostedService
// with tool sources of the test's own (one whose listing the test holds in flight).
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { Worker } from 'node:worker_threads';
import type { Tool, ToolSource } from '../../src/agent/tools/types';
import type { Envelope, ServiceEvent } from '../../src/protocol';
import { HostedService } from '../../src/service-thread/hosted-service';
import type { FromThread } from '../../src/service-thread/wire';
import { extensionHarness } from '../helpers/extension-harness';
import type { RecordedRequest } from '../helpers/fake-http';
import { TEST_TOKEN } from '../helpers/service';
import { withoutNote } from '../helpers/service-note';
import { tempDir, waitFor } from '../helpers/temp';
import { LanguageModelTextPart, LanguageModelToolResult, testing } from '../helpers/vscode-double';

const harness = extensionHarness();

type Api = Awaited<ReturnType<typeof harness.activate>>['api'];

/** The service's worker thread (private to HostedService). */
const workerOf = (hosted: unknown) => (hosted as { worker: Worker }).worker;

/** Counts the 'tools.list' calls the thread makes, which the main side answers. */
function countListings(worker: Worker): { readonly count: number } {
  const counted = { count: 0 };
  worker.on('message', (message: FromThread) => {
    if (message.t === 'call' && message.call.method === 'tools.list') counted.count += 1;
  });
  return counted;
}

const messagesOf = (request: RecordedRequest) => withoutNote((request.body as { messages: { role: string; content: string }[] }).messages);
const offeredTo = (request: RecordedRequest) => ((request.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name);
const lastIsToolResult = (request: RecordedRequest) => messagesOf(request).at(-1)?.role === 'tool';

/** Another extension's tool, as vscode.lm.registerTool makes it known. */
const WORD_COUNT = {
  name: 'word_count',
  description: 'Counts the words of a text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  tags: [],
  invoke: () => new LanguageModelToolResult([new LanguageModelTextPart('3 words')]),
};

/** An answer's data, once it is known to be ok. */
function dataOf<T>(answer: Envelope): T {
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  return (answer as { data: unknown }).data as T;
}

async function chat(api: Api, message: string): Promise<void> {
  dataOf(await api.hosting.backend!.request({ type: 'chat', message }));
}

describe("the editor's tools, listed once on the service's thread", () => {
  test("a 4-step tool turn lists the editor's two sources once; the next turn not at all", async () => {
    const { api } = await harness.activate({ permission_mode: 'allow' });
    const listings = countListings(workerOf(api.hosting.service));
    // Three calls of an editor tool, one step each, then the answer.
    const steps = (request: RecordedRequest) => (messagesOf(request).filter((m) => m.role === 'tool').length < 3 ? { tool_calls: [{ name: 'get_selection', arguments: {} }] } : { text: 'done' });
    const asked = harness.fake.requests.length;
    harness.fake.script(steps, steps, steps, steps);
    await chat(api, 'look three times');
    assert.equal(harness.fake.requests.length - asked, 4, 'four steps');
    assert.ok(offeredTo(harness.fake.requests.at(-1)!).includes('get_selection'));
    assert.equal(listings.count, 2, "each of the editor's sources (its tools, VS Code's) listed once");
    harness.fake.script(steps, steps, steps, steps);
    await chat(api, 'and again');
    assert.equal(listings.count, 2, 'kept for the next turn');
  });

  test('a tool another extension adds between two steps is offered at the next step (extensions.onDidChange)', async () => {
    const { api } = await harness.activate({ permission_mode: 'allow' });
    const listings = countListings(workerOf(api.hosting.service));
    const asked = harness.fake.requests.length;
    harness.fake.script(
      () => {
        // The extension host's thread, while the model answers the first step: an extension is installed.
        testing.lmTools.push(WORD_COUNT);
        testing.extensionsChanged.fire();
        return { tool_calls: [{ name: 'get_selection', arguments: {} }] };
      },
      { text: 'done' },
    );
    await chat(api, 'go');
    const [first, second] = harness.fake.requests.slice(asked);
    assert.equal(offeredTo(first!).includes('vscode_word_count'), false);
    assert.ok(offeredTo(second!).includes('vscode_word_count'), offeredTo(second!).join(', '));
    assert.equal(listings.count, 3, "the editor's sources listed once each, VS Code's once more after the change");
  });

  test('a tool VS Code lists with no event at all (an MCP server started) is seen within its poll', async () => {
    const { api } = await harness.activate({});
    const names = async () => dataOf<{ tools: { name: string }[] }>(await api.hosting.backend!.request({ type: 'list_tools' })).tools.map((t) => t.name);
    assert.equal((await names()).includes('vscode.word_count'), false);
    testing.lmTools.push(WORD_COUNT);
    await waitFor(async () => (await names()).includes('vscode.word_count'), 'the new tool listed', 10_000);
  });
});

/** A tool source of the test's: its list changed at will (telling its watcher), its listing held while `hold` is set. */
function changingSource(name: string, initial: Tool[]) {
  let current = initial;
  const watchers = new Set<() => void>();
  const source = {
    name,
    asked: 0,
    hold: undefined as Promise<void> | undefined,
    async tools(): Promise<Tool[]> {
      source.asked += 1;
      const listed = current;
      await source.hold;
      return listed;
    },
    watch(changed: () => void) {
      watchers.add(changed);
      return () => void watchers.delete(changed);
    },
    set(next: Tool[]) {
      current = next;
      for (const changed of watchers) changed();
    },
  } satisfies ToolSource & Record<string, unknown>;
  return source;
}

function toolNamed(name: string, ran: string[] = []): Tool {
  return {
    name,
    description: `The test's ${name}.`,
    inputSchema: { type: 'object', properties: {} },
    parameters: {},
    run: async () => {
      ran.push(name);
      return { content: `${name} ran` };
    },
  };
}

/** The service on its thread with `source` as the editor's one tool source; a session of the editor's. */
async function hostWith(source: ToolSource) {
  const data = await tempDir('ra-thread-tools-');
  harness.cleanups.push(data.cleanup);
  await writeFile(join(data.dir, 'service.json'), JSON.stringify({ auth_token: TEST_TOKEN, base_url: harness.fake.url, model: 'fake-model', permission_mode: 'allow' }));
  const hosted = await HostedService.begin({ dataDir: data.dir, port: 0, host: '127.0.0.1', hostServices: { toolSources: [source] } });
  harness.cleanups.push(() => hosted.stop());
  await hosted.start();
  await hosted.ready;
  const events: ServiceEvent[] = [];
  const session = hosted.openSession({ send: (event) => events.push(event) });
  harness.cleanups.push(async () => session.close());
  let next = 0;
  const request = (frame: Record<string, unknown>) => session.request({ ...frame, id: `r${(next += 1)}` });
  const listed = async () => dataOf<{ tools: { name: string }[] }>(await request({ type: 'list_tools' })).tools.map((t) => t.name);
  return { hosted, request, listed };
}

describe("the editor's listing and its changes, with a source of the test's", () => {
  test('a change while a listing is in flight is not lost: that listing is not kept, the next list asks again', async () => {
    const source = changingSource('editor', [toolNamed('a')]);
    const { listed } = await hostWith(source);
    let release: () => void = () => undefined;
    source.hold = new Promise((resolve) => (release = resolve));
    const first = listed();
    await waitFor(() => source.asked === 1, 'the listing in flight');
    // The list changes (and the thread is told) while the main side still works out the old one.
    source.set([toolNamed('a'), toolNamed('b')]);
    source.hold = undefined;
    release();
    assert.ok((await first).includes('a'));
    assert.equal((await first).includes('b'), false, 'the listing in flight answers what it was asked');
    const second = await listed();
    assert.ok(second.includes('b'), `the next listing sees the change: ${second.join(', ')}`);
    assert.equal(source.asked, 2);
    await listed();
    assert.equal(source.asked, 2, 'then kept');
  });

  test("the main side runs no tool its source no longer lists, though the thread's step listed it", async () => {
    const ran: string[] = [];
    const source = changingSource('editor', [toolNamed('gone', ran)]);
    const { request } = await hostWith(source);
    const asked = harness.fake.requests.length;
    harness.fake.script(
      () => {
        // While the model answers the step that was offered `gone`, the editor stops listing it.
        source.set([]);
        return { tool_calls: [{ name: 'gone', arguments: {} }] };
      },
      (request) => ({ text: `tool said: ${messagesOf(request).at(-1)!.content}` }),
    );
    const answer = dataOf<{ response: string }>(await request({ type: 'chat', message: 'use it' }));
    assert.deepEqual(ran, [], 'never run');
    assert.ok(lastIsToolResult(harness.fake.requests.at(-1)!));
    assert.match(answer.response, /gone: no such tool in the editor/);
    assert.equal(harness.fake.requests.length - asked, 2);
  });
});
