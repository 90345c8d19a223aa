/**
 * "Never forgets silently" (issue 22): the history fills the model's own window and never more, and
 * older turns are summarised into a stored `summary` message when they would not fit.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SUMMARY_INSTRUCTIONS } from '../../src/agent/compaction/summariser';
import { countWords } from '../helpers/fake-http';
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest } from '../helpers/fake-openai';
import { startService, type RunningService } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

const WINDOW = 16_384;
/** What the service keeps for the reply when service.json sets no max_tokens (compaction/budget.ts). */
const REPLY_ROOM = 4_096;
const CONSTRAINT = 'Never touch the migrations folder';
const TURNS = 300;

type WireMessage = { role: string; content: string | null; tool_calls?: unknown[] };

let fake: FakeOpenAI;
let workspace: string;
const cleanups: (() => Promise<void>)[] = [];

before(async () => {
  fake = await startFakeOpenAI();
  const temp = await tempDir('ra-compaction-');
  workspace = temp.dir;
  cleanups.push(temp.cleanup);
  // Tool outputs of about 1,900 estimated tokens each, of words as a tokenizer sees them.
  for (let f = 0; f < 5; f += 1) {
    const lines = Array.from({ length: 120 }, (_, i) => `line ${i} of report ${f}: the quarterly figures were checked against ledger entries ${i * 7 + f}`);
    await writeFile(join(workspace, `report-${f}.txt`), `${lines.join('\n')}\n`);
  }
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fake?.close();
});

async function service(config: Record<string, unknown> = {}): Promise<RunningService> {
  const svc = await startService({ base_url: fake.url, workspace, permission_mode: 'allow', model: 'fake-model', prices: { 'fake-model': { context_window: WINDOW } }, ...config });
  cleanups.push(() => svc.dispose());
  return svc;
}

const messagesOf = (request: RecordedRequest) => request.body.messages as WireMessage[];
const isSummariser = (request: RecordedRequest) => messagesOf(request)[0]?.content === SUMMARY_INSTRUCTIONS;

/** The service's own estimate of a request (history.ts estimateTokens, compaction/budget.ts toolsTokens), on the wire. */
function estimated(request: RecordedRequest): number {
  const messages = messagesOf(request).reduce((sum, m) => sum + Math.ceil(((m.content ?? '').length + (m.tool_calls ? JSON.stringify(m.tool_calls).length : 0)) / 4) + 4, 0);
  const tools = request.body.tools ? Math.ceil(JSON.stringify(request.body.tools).length / 4) : 0;
  return messages + tools;
}

/**
 * The model's side: a turn asks for a report with read_file, then answers; the summariser keeps each
 * line of its input that states a rule, as a model told to keep every constraint would.
 */
function model(failSummaries: () => boolean) {
  return (request: RecordedRequest) => {
    const messages = messagesOf(request);
    if (isSummariser(request)) {
      if (failSummaries()) return { status: 503 };
      const input = messages.at(-1)!.content ?? '';
      const rules = [...new Set(input.match(/Never touch[^\n]*/g) ?? [])];
      return { text: `## Goal\nKeep the reports checked.\n## Constraints and decisions\n${rules.map((r) => `- ${r}`).join('\n')}\n## Progress\nReports read.` };
    }
    const last = withoutNote(messages).at(-1)!;
    if (last.role === 'user') {
      const turn = Number(/turn (\d+)/.exec(last.content ?? '')?.[1] ?? 0);
      return { tool_calls: [{ name: 'read_file', arguments: { path: `report-${turn % 5}.txt` } }] };
    }
    return { text: 'Checked.' };
  };
}

// 300 real turns (600 provider calls and the summaries) take ~30 s on an idle machine; a shared one needs longer than the default.
describe('a long session against a 16k window', () => {
  test(`${TURNS} turns with large tool outputs: every request fits, the first constraint survives, the summary is stored and shown, search finds the first message`, { timeout: 600_000 }, async () => {
    const svc = await service();
    fake.setDefault(model(() => false));
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const first = await client.request({ type: 'chat', message: `turn 0: check the reports. ${CONSTRAINT}, whatever happens.`, id: 'turn-0' });
    assert.equal(first.status, 'ok', JSON.stringify(first));
    const conversation_id = (first.data as { conversation_id: string }).conversation_id;
    const startAt = fake.requests.length - 2;
    for (let turn = 1; turn < TURNS; turn += 1) {
      const reply = await client.request({ type: 'chat', conversation_id, message: `turn ${turn}: next report please`, id: `turn-${turn}` });
      assert.equal(reply.status, 'ok', JSON.stringify(reply));
    }
    const requests = fake.requests.slice(startAt).filter((r) => r.path.endsWith('/chat/completions'));
    const turnRequests = requests.filter((r) => !isSummariser(r));
    const summariser = requests.filter(isSummariser);
    assert.equal(turnRequests.length, TURNS * 2);
    assert.ok(summariser.length >= 5, `compacted ${summariser.length} times`);

    let firstCompacted = -1;
    turnRequests.forEach((request, i) => {
      // Every request, the summariser's too, leaves the reply its room in the window: by the service's estimate and by the fake's own count.
      assert.ok(estimated(request) + REPLY_ROOM <= WINDOW, `request ${i}: ${estimated(request)} estimated tokens`);
      assert.ok(countWords(JSON.stringify(request.body)) + REPLY_ROOM <= WINDOW, `request ${i}: ${countWords(JSON.stringify(request.body))} words`);
      const text = messagesOf(request)
        .map((m) => m.content ?? '')
        .join('\n');
      assert.ok(text.includes(CONSTRAINT), `request ${i} lost the constraint`);
      if (firstCompacted < 0 && text.includes('were summarised to fit the context window')) firstCompacted = i;
    });
    for (const request of summariser) {
      const room = request.body.max_tokens as number;
      assert.ok(estimated(request) + room <= WINDOW && countWords(JSON.stringify(request.body)) + room <= WINDOW, `a summary request of ${estimated(request)} estimated tokens`);
    }
    assert.ok(firstCompacted > 0, 'a request after compaction');

    // The last request is the summary and the recent turns (old tool outputs cut), not 300 turns.
    const last = messagesOf(turnRequests.at(-1)!);
    assert.ok(last.length < TURNS, `${last.length} messages in the last request`);
    assert.match(last.find((m) => m.role !== 'system')!.content ?? '', /summarised/, 'the summary comes first after the system message');

    // The summary is stored, listed by get_messages (with what it covers), and was sent live as a chat.message.
    const listed = (await client.request({ type: 'get_messages', conversation_id, limit: 500 })).data as {
      messages: { id: string; role: string; content: string; compaction?: { status: string; messages?: number } }[];
    };
    const summaries = listed.messages.filter((m) => m.role === 'summary');
    assert.ok(summaries.length > 0);
    for (const m of summaries) assert.ok(m.compaction?.status === 'summarised' && (m.compaction.messages ?? 0) > 0 && m.content.includes(CONSTRAINT), JSON.stringify(m).slice(0, 600));
    assert.ok(client.frames.some((f) => f.event === 'chat.message' && (f.message as { role: string }).role === 'summary'));
    // The originals stay: search finds the first message (the summaries that quote it are hits too).
    const hits = (await client.request({ type: 'search_messages', query: 'migrations folder', conversation_id, limit: 200 })).data as { hits: { message_id: string; role: string; snippet: string }[] };
    assert.ok(
      hits.hits.some((h) => h.role === 'user' && h.snippet.includes('turn 0')),
      JSON.stringify(hits.hits.filter((h) => h.role === 'user')),
    );

    // The context meter tells how full the window was on the last call, of this window.
    const conversations = (await client.request({ type: 'list_conversations' })).data as { conversations: { id: string; usage: { context_used: number; context_window: number } }[] };
    const usage = conversations.conversations.find((c) => c.id === conversation_id)!.usage;
    assert.equal(usage.context_window, WINDOW);
    assert.ok(usage.context_used > 0 && usage.context_used <= WINDOW);
    if (process.env.COMPACTION_DUMP) await writeFile(process.env.COMPACTION_DUMP, JSON.stringify({ first: turnRequests[0].body, last: turnRequests.at(-1)!.body }, null, 2));
    client.close();
  });
});

describe('a compaction that fails', () => {
  test('the provider refuses the summary: the oldest turns are cut, the request still fits, and the person is told (stored notice, live event)', async () => {
    const svc = await service({ prices: { 'fake-model': { context_window: 8_192 } } });
    let failing = true;
    fake.setDefault(model(() => failing));
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const startAt = fake.requests.length;
    const first = await client.request({ type: 'chat', message: `turn 0: check the reports. ${CONSTRAINT}.`, id: 'f-0' });
    const conversation_id = (first.data as { conversation_id: string }).conversation_id;
    for (let turn = 1; turn < 30; turn += 1) {
      const reply = await client.request({ type: 'chat', conversation_id, message: `turn ${turn}: next report please`, id: `f-${turn}` });
      assert.equal(reply.status, 'ok', JSON.stringify(reply));
    }
    const requests = fake.requests.slice(startAt).filter((r) => !isSummariser(r));
    assert.ok(fake.requests.slice(startAt).some(isSummariser), 'a summary was asked for');
    for (const request of requests) assert.ok(estimated(request) + REPLY_ROOM <= 8_192, `${estimated(request)} estimated tokens`);
    // The cut: the first message is no longer sent, and that is said.
    assert.ok(!messagesOf(requests.at(-1)!).some((m) => (m.content ?? '').includes(CONSTRAINT)));
    const notice = client.frames.find((f) => f.event === 'chat.message' && (f.message as { role: string }).role === 'summary');
    const message = notice?.message as { content: string; compaction: { status: string } } | undefined;
    assert.equal(message?.compaction.status, 'failed');
    assert.match(message!.content, /could not be summarised \(.*HTTP 503.*\)/);
    const listed = (await client.request({ type: 'get_messages', conversation_id, limit: 500 })).data as { messages: { role: string; compaction?: { status: string } }[] };
    assert.ok(listed.messages.some((m) => m.role === 'summary' && m.compaction?.status === 'failed'));

    // The provider is back: compact_conversation makes the summary, and the constraint is sent again.
    failing = false;
    const compacted = await client.request({ type: 'compact_conversation', conversation_id, focus: 'the rules' });
    assert.equal(compacted.status, 'ok', JSON.stringify(compacted));
    const made = compacted.data as { message: { content: string }; context_used: number; context_window: number };
    assert.ok(made.message.content.includes(CONSTRAINT), "the summary keeps the first message's rule");
    assert.equal(made.context_window, 8_192);
    const summariserRequest = fake.requests.filter(isSummariser).at(-1)!;
    assert.match(messagesOf(summariserRequest).at(-1)!.content ?? '', /keep in particular: the rules/);
    await client.request({ type: 'chat', conversation_id, message: 'turn 31: next report please' });
    assert.match(messagesOf(fake.requests.filter((r) => !isSummariser(r)).at(-2)!).find((m) => m.role !== 'system')!.content ?? '', /summarised to fit the context window/);
    client.close();
  });
});

describe("the server's own window", () => {
  test("Ollama's num_ctx sizes the requests: asked once, without the API key, and shown as the window", async () => {
    const ollama = await startFakeOpenAI({ ollamaNumCtx: 8_192 });
    cleanups.push(() => ollama.close());
    // No `prices` entry: the model is unknown to the table, so without the server's figure it would get 32,768.
    const svc = await startService({ base_url: ollama.url, workspace, permission_mode: 'allow', model: 'llama3.1' });
    cleanups.push(() => svc.dispose());
    ollama.setDefault(model(() => false));
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const first = await client.request({ type: 'chat', message: `turn 0: ${CONSTRAINT}.` });
    const conversation_id = (first.data as { conversation_id: string }).conversation_id;
    for (let turn = 1; turn < 12; turn += 1) assert.equal((await client.request({ type: 'chat', conversation_id, message: `turn ${turn}: next` })).status, 'ok');
    for (const request of ollama.requests.filter((r) => !isSummariser(r))) assert.ok(estimated(request) + REPLY_ROOM <= 8_192, `${estimated(request)} estimated tokens`);
    assert.ok(ollama.requests.some(isSummariser), 'compacted for the 8k window');
    assert.deepEqual(
      ollama.asides.map((r) => `${r.method} ${r.path}`),
      ['GET /api/v0/models/llama3.1', 'POST /api/show'],
      'asked once',
    );
    assert.ok(
      ollama.asides.every((r) => r.headers.authorization === undefined),
      'the API key is not sent to the probe',
    );
    const conversations = (await client.request({ type: 'list_conversations' })).data as { conversations: { id: string; usage: { context_window: number } }[] };
    assert.equal(conversations.conversations.find((c) => c.id === conversation_id)!.usage.context_window, 8_192);
    client.close();
  });
});
