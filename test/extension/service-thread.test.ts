// The service on its worker thread (src/service-thread/), as the extension runs it: the whole extension
// with the `vscode` double over the real service on a real worker thread (temp dirs, loopback). What
// crosses the thread's port: a streamed turn of the editor's language models (its deltas, its cancel,
// its errors' kinds), a call of the editor's own tools, a thread killed mid-turn, deactivate mid-turn
// (the thread ended by terminate once stopped, never by its own exit).
// Runs from source (tsx starts the thread from src/service-thread/service-thread.ts): no build needed.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { processNonce } from '../../src/platform/process-nonce';
import type { Envelope, ServiceEvent } from '../../src/protocol';
import { extensionHarness } from '../helpers/extension-harness';
import { fakeModel } from '../helpers/fake-lm';
import type { RecordedRequest } from '../helpers/fake-http';
import { waitFor } from '../helpers/temp';
import { watchEnd } from '../helpers/thread-end';
import { LanguageModelTextPart, testing } from '../helpers/vscode-double';
import { startService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

const harness = extensionHarness();

type Api = Awaited<ReturnType<typeof harness.activate>>['api'];

/** A chat view's channel of the hosting window: its answers and events, as the webview bridge gets them. */
function view(api: Api) {
  const responses: Envelope[] = [];
  const events: ServiceEvent[] = [];
  const channel = api.hosting.backend!.openViewChannel({ onResponse: (e) => responses.push(e), onEvent: (e) => events.push(e) });
  const answer = (id: string) => waitFor(() => responses.find((r) => r.id === id), `the answer to ${id}`, 20_000);
  return { channel, responses, events, answer };
}

/** The service's worker thread (private to HostedService: a test kills it as a crash would). */
const workerOf = (api: Api) => (api.hosting.service as unknown as { worker: Worker }).worker;

type Crossed = { t: string; sid?: number; event?: ServiceEvent; envelope?: Envelope };

/** What crosses the thread's port to the editor, one entry a message, a batch's each with its crossing's number. */
function recordCrossings(api: Api) {
  const crossed: { t: string; sid?: number; event?: string; id?: unknown; crossing: number }[] = [];
  let crossing = 0;
  workerOf(api).on('message', (m: Crossed & { messages?: Crossed[] }) => {
    crossing += 1;
    for (const one of m.t === 'batch' ? m.messages! : [m]) crossed.push({ t: one.t, sid: one.sid, event: one.event?.event, id: one.envelope?.id, crossing });
  });
  return crossed;
}

describe('the service on its worker thread', () => {
  test("a streamed turn of the editor's language models: every delta crosses, in order, and the reply is whole", async () => {
    const { api } = await harness.activate({ provider: 'vscode', model: 'm' });
    testing.chatModels = [
      fakeModel(
        'm',
        ['Hel', 'lo, ', 'from ', 'the editor'].map((t) => new LanguageModelTextPart(t)),
      ),
    ];
    const v = view(api);
    v.channel.send({ type: 'chat', message: 'hi', id: 'c1', stream: true });
    const answer = await v.answer('c1');
    assert.equal(answer.status, 'ok', JSON.stringify(answer));
    assert.equal((answer.data as { response: string }).response, 'Hello, from the editor');
    const deltas = v.events.filter((e) => e.event === 'chat.delta').map((e) => (e as { text?: string; delta?: string }).text ?? (e as { delta?: string }).delta);
    assert.equal(deltas.join(''), 'Hello, from the editor', JSON.stringify(deltas));
    v.channel.dispose();
  });

  test("a streamed turn crosses the port joined, to the chat view's session only: fewer crossings than pieces, in order, the last before the answer", async () => {
    const { api } = await harness.activate({ provider: 'vscode', model: 'm' });
    const words = Array.from({ length: 40 }, (_, i) => `w${i} `);
    testing.chatModels = [
      fakeModel(
        'm',
        words.map((t) => new LanguageModelTextPart(t)),
      ),
    ];
    const crossed = recordCrossings(api);
    const v = view(api);
    v.channel.send({ type: 'chat', message: 'hi', id: 'c1', stream: true });
    const answer = await v.answer('c1');
    assert.equal(answer.status === 'ok' && (answer.data as { response: string }).response, words.join(''), JSON.stringify(answer));
    const deltas = v.events.filter((e) => e.event === 'chat.delta') as Extract<ServiceEvent, { event: 'chat.delta' }>[];
    assert.equal(deltas.map((d) => d.delta).join(''), words.join(''), 'nothing lost, in order');
    const pieces = crossed.filter((m) => m.event === 'chat.delta');
    assert.equal(pieces.length, deltas.length);
    assert.ok(new Set(pieces.map((p) => p.crossing)).size < words.length, `${pieces.length} crossings for ${words.length} pieces`);
    const lastPiece = crossed.lastIndexOf(pieces.at(-1)!);
    assert.ok(crossed.findIndex((m) => m.t === 'response' && m.id === 'c1') > lastPiece, 'the last piece crossed before the answer');
    // The editor's own session (commands, prompts) hears no chat's pieces nor its conversation's updates: one session each.
    await waitFor(() => crossed.some((m) => m.event === 'turn.ended'), 'the turn to end');
    for (const kind of ['chat.delta', 'conversation.updated', 'turn.ended', 'chat.message']) {
      const sids = new Set(crossed.filter((m) => m.event === kind).map((m) => m.sid));
      assert.equal(sids.size, 1, `${kind} crossed for sessions ${[...sids].join(', ')}`);
    }
    v.channel.dispose();
  });

  test("a chat's end crosses the port as one message: its reply, the conversation's row, turn.ended and the answer, in the order sent", async () => {
    const { api } = await harness.activate({ provider: 'vscode', model: 'm' });
    testing.chatModels = [fakeModel('m', [new LanguageModelTextPart('a reply')])];
    const crossed = recordCrossings(api);
    const v = view(api);
    v.channel.send({ type: 'chat', message: 'hi', id: 'c1', stream: true });
    await v.answer('c1');
    await waitFor(() => v.events.some((e) => e.event === 'turn.ended'), 'the turn to end');
    // What the view's session heard, as it heard it: the same events in the same order as they crossed.
    const heard = crossed.filter((m) => m.sid !== undefined || m.id === 'c1');
    assert.deepEqual(
      heard.filter((m) => m.t === 'event').map((m) => m.event),
      v.events.map((e) => e.event),
    );
    // After the reply's last piece: the reply, its row, turn.ended, then the answer, all in one crossing.
    const answer = heard.findIndex((m) => m.id === 'c1');
    const end = heard.slice(heard.findLastIndex((m) => m.event === 'chat.delta') + 1, answer + 1);
    assert.deepEqual(end.map((m) => m.event ?? m.t).sort(), ['chat.message', 'conversation.updated', 'response', 'turn.ended'], JSON.stringify(heard));
    assert.equal(end.at(-1)!.t, 'response', 'the answer after the events before it');
    assert.equal(new Set(end.map((m) => m.crossing)).size, 1, `the chat's end crossed as ${JSON.stringify(end)}`);
    const crossings = new Set(heard.map((m) => m.crossing)).size;
    assert.ok(crossings < heard.length, `${heard.length} messages in ${crossings} crossings`);
    v.channel.dispose();
  });

  test("cancel reaches the editor's model on the main thread (its token cancelled); the turn ends cancelled, not failed", async () => {
    const { api } = await harness.activate({ provider: 'vscode', model: 'm' });
    const seen: { token?: { isCancellationRequested: boolean } } = {};
    testing.chatModels = [
      fakeModel(
        'm',
        Array.from({ length: 2000 }, () => new LanguageModelTextPart('x')),
        seen,
      ),
    ];
    const v = view(api);
    v.channel.send({ type: 'chat', message: 'go on', id: 'long', stream: true });
    await waitFor(() => v.events.some((e) => e.event === 'chat.delta'), 'the first delta', 20_000);
    v.channel.send({ type: 'cancel', id: 'long' });
    const answer = await v.answer('long');
    assert.equal(seen.token?.isCancellationRequested, true, "the editor's request was cancelled");
    assert.equal(answer.status, 'ok', JSON.stringify(answer));
    assert.equal((answer.data as { cancelled?: boolean }).cancelled, true, JSON.stringify(answer));
    v.channel.dispose();
  });

  test("an editor model's failure keeps its kind across the thread: no model is 'not configured', as in process", async () => {
    const { api } = await harness.activate({ provider: 'vscode', model: 'm' });
    testing.chatModels = [];
    const v = view(api);
    v.channel.send({ type: 'chat', message: 'hi', id: 'c1' });
    const answer = await v.answer('c1');
    // The same turn on a service in this thread, the same provider: the same answer.
    const { createLanguageModelProvider } = await import('../../src/extension/lm-provider');
    const svc = await startService({ provider: 'vscode', model: 'm' }, { hostServices: { languageModels: () => createLanguageModelProvider() } });
    harness.cleanups.push(() => svc.dispose());
    const phone = await TestClient.authed(svc.wsUrl, svc.token);
    harness.cleanups.push(async () => phone.close());
    const inProcess = await phone.request({ type: 'chat', message: 'hi', id: 'c1' });
    assert.deepEqual(answer, inProcess);
    assert.equal((answer as { code?: string }).code, inProcess.status === 'error' ? inProcess.code : 'no');
    v.channel.dispose();
  });

  test('an editor tool (get_selection) called by the model runs on the main thread; its result reaches the model', async () => {
    const { api } = await harness.activate({ permission_mode: 'allow' });
    const hasToolResult = (request: RecordedRequest) => withoutNote((request.body as { messages?: { role: string }[] }).messages ?? []).at(-1)?.role === 'tool';
    const round = (request: RecordedRequest) => {
      const messages = (request.body as { messages: { role: string; content: string }[] }).messages;
      return hasToolResult(request) ? { text: `tool said: ${withoutNote(messages).at(-1)!.content}` } : { tool_calls: [{ name: 'get_selection', arguments: {} }] };
    };
    harness.fake.script(round, round);
    const v = view(api);
    v.channel.send({ type: 'chat', message: 'what is selected?', id: 'c1' });
    const answer = await v.answer('c1');
    assert.equal(answer.status, 'ok', JSON.stringify(answer));
    assert.equal((answer.data as { response: string }).response, 'tool said: no active editor');
    v.channel.dispose();
  });

  test('the thread killed mid-turn: the turn is answered at once, the window shows the error, the lock is let go, Restart Service hosts again', async () => {
    const { api, dataDir } = await harness.activate({});
    harness.fake.script({ text: 'never sent', delayMs: 60_000 });
    const asked = harness.fake.requests.length;
    const v = view(api);
    v.channel.send({ type: 'chat', message: 'a long one', id: 'c1' });
    await waitFor(() => harness.fake.requests.length > asked, 'the turn reached the model', 20_000);
    const palette = api.hosting.backend!.request({ type: 'get_usage' });
    // The thread's lock names it and this process's nonce: a later process given our pid would not take it for its own.
    const lock = JSON.parse(readFileSync(join(dataDir, 'service.lock'), 'utf8')) as { thread?: number; process_nonce?: string };
    assert.deepEqual([lock.thread, lock.process_nonce], [workerOf(api).threadId, processNonce()]);
    await workerOf(api).terminate();
    const answer = await v.answer('c1').catch((error: Error) => assert.fail(`${error.message}; the view got ${JSON.stringify(v.responses)}`));
    assert.notEqual(answer.status, 'ok');
    assert.match(String((answer as { error?: string }).error), /stopped/);
    const command = await palette;
    assert.ok(command.status === 'ok' || /stopped/.test(command.error), `a command in flight is answered too: ${JSON.stringify(command)}`);
    await waitFor(() => api.hosting.state.state === 'error', 'the error state', 10_000);
    assert.match((api.hosting.state as { detail: string }).detail, /stopped unexpectedly/);
    await waitFor(() => !existsSync(join(dataDir, 'service.lock')), 'the lock of the killed thread let go', 10_000);
    await testing.commands.get('remoteAssistant.restartService')!();
    await waitFor(() => api.hosting.state.state === 'hosting', 'hosting again', 20_000);
    assert.equal((await api.hosting.backend!.request({ type: 'get_config' })).status, 'ok');
  });

  test('deactivate mid-turn: the turn in flight finishes (graceful stop on the thread), then the thread ends and the lock is let go', async () => {
    const { api, dataDir } = await harness.activate({});
    harness.fake.script({ text: 'finished while stopping', delayMs: 800 });
    const asked = harness.fake.requests.length;
    const v = view(api);
    v.channel.send({ type: 'chat', message: 'one more', id: 'c1' });
    await waitFor(() => harness.fake.requests.length > asked, 'the turn reached the model', 20_000);
    // Ended by terminate once stopped, not by its own exit (platform/worker-thread.ts).
    let ended: { code: number; byItself: boolean } | undefined;
    void watchEnd(workerOf(api)).then((how) => (ended = how));
    const ext = await import('../../src/extension/extension');
    await ext.deactivate();
    // Hosting bounds its wait by the deactivate budget (4.5 s): on a loaded machine the stop may finish after it.
    await waitFor(() => ended, 'the thread ended', 20_000);
    assert.deepEqual(ended, { code: 1, byItself: false });
    const answer = v.responses.find((r) => r.id === 'c1');
    assert.equal(
      answer?.status,
      'ok',
      `answered before deactivate resolved: ${JSON.stringify(v.responses)}; events ${JSON.stringify(v.events.map((e) => e.event))}; model asked ${harness.fake.requests.length}`,
    );
    assert.equal((answer!.data as { response: string }).response, 'finished while stopping');
    // The view heard its turn to the end (its sessions are closed by the graceful stop, after the turn).
    assert.ok(
      v.events.some((e) => e.event === 'turn.ended'),
      `the turn's end heard: ${JSON.stringify(v.events.map((e) => e.event))}`,
    );
    assert.equal(existsSync(join(dataDir, 'service.lock')), false, 'the lock let go');
    assert.equal(api.hosting.state.state, 'stopped');
  });
});
