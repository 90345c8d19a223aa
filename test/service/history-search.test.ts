// search_messages and export_conversation (docs/protocol.md, "Search, export and backup") against the real
// service over a real socket. The search tests hold the contract of MessagesRepo.search (words, highlights,
// newest first, limit, a query that cannot be searched), not how it is implemented, so they hold for the
// full-text index too.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { postJson } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';
import type { OpenSession } from '../../src/commands/door';
import { clientMessagesOf, renderExport } from '../../src/commands/conversation-export';

interface Hit {
  message_id: string;
  conversation_id: string;
  conversation_title: string;
  role: string;
  timestamp: string;
  snippet: string;
  highlights: [number, number][];
}
interface Piece {
  file_name: string;
  mime_type: string;
  text: string;
  offset: number;
  next_offset: number | null;
  total_chars: number;
  until: string;
}

let client: TestClient;
const svc = useService({
  workspace: true,
  config: {
    model: 'fake-model',
    // A window the big message of the export test fits in whole, so no compaction adds to what is exported.
    prices: { 'openai/fake-model': { context_window: 1_000_000 } },
    permission_mode: 'allow',
    channels: [{ name: 'hooks', type: 'webhook', accounts: { acme: { incoming_path: '/hooks/acme', outgoing_url: 'http://127.0.0.1:9/none' } } }],
  },
  afterStart: async (started) => {
    client = await started.client();
  },
});

async function chat(message: string, conversationId?: string): Promise<string> {
  const reply = await client.request({ type: 'chat', message, ...(conversationId ? { conversation_id: conversationId } : {}) });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return (reply.data as { conversation_id: string }).conversation_id;
}

async function search(frame: Record<string, unknown>, as: { request: (f: Record<string, unknown>) => Promise<unknown> } = client): Promise<Hit[]> {
  const reply = (await as.request({ type: 'search_messages', ...frame })) as { status: string; data: { hits: Hit[] } };
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return reply.data.hits;
}

const highlighted = (hit: Hit) => hit.highlights.map(([start, end]) => hit.snippet.slice(start, end).toLowerCase());

describe('search_messages', () => {
  test('finds a word with its conversation, role and the match highlighted in the snippet', async () => {
    const id = await chat('Deploying the Zebra service tonight, after the backup');
    const hits = await search({ query: 'zebra' });
    const mine = hits.filter((h) => h.conversation_id === id);
    assert.deepEqual(mine.map((h) => h.role).sort(), ['assistant', 'user'], 'the message and the echoed reply');
    for (const hit of mine) {
      assert.equal(hit.conversation_title, 'Deploying the Zebra service tonight, after the backup');
      assert.ok(hit.highlights.length > 0);
      assert.deepEqual(
        highlighted(hit),
        hit.highlights.map(() => 'zebra'),
      );
      assert.ok(!Number.isNaN(Date.parse(hit.timestamp)));
    }
  });

  test('every word must match, the last one as a prefix; highlights mark each word', async () => {
    const id = await chat('the quartz clock stopped at midnight');
    const both = (await search({ query: 'Quartz midn' })).filter((h) => h.conversation_id === id && h.role === 'user');
    assert.equal(both.length, 1);
    // A prefix marks the whole word it matched.
    assert.deepEqual(highlighted(both[0]).sort(), ['midnight', 'quartz']);
    assert.deepEqual(
      (await search({ query: 'quartz sunrise' })).filter((h) => h.conversation_id === id),
      [],
      'a word it does not hold',
    );
    assert.deepEqual(
      (await search({ query: 'quar clock' })).filter((h) => h.conversation_id === id),
      [],
      'only the last word is a prefix',
    );
  });

  test('conversation_id keeps the search to one conversation', async () => {
    const first = await chat('walrus notes, part one');
    const second = await chat('walrus notes, part two');
    const all = await search({ query: 'walrus' });
    assert.deepEqual(new Set(all.map((h) => h.conversation_id)), new Set([first, second]));
    const one = await search({ query: 'walrus', conversation_id: second });
    assert.ok(one.length > 0);
    assert.ok(one.every((h) => h.conversation_id === second));
  });

  test('newest first, and limit keeps the newest', async () => {
    const id = await chat('heron sighting 1');
    await chat('heron sighting 2', id);
    await chat('heron sighting 3', id);
    const hits = await search({ query: 'heron', conversation_id: id });
    const users = hits.filter((h) => h.role === 'user').map((h) => h.snippet);
    assert.deepEqual(users, ['heron sighting 3', 'heron sighting 2', 'heron sighting 1']);
    const times = hits.map((h) => Date.parse(h.timestamp));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => b - a),
    );
    const two = await search({ query: 'heron', conversation_id: id, limit: 2 });
    assert.deepEqual(
      two.map((h) => h.message_id),
      hits.slice(0, 2).map((h) => h.message_id),
    );
  });

  test('a long message gives a short snippet around the match', async () => {
    const id = await chat(`${'filler '.repeat(400)}the ocelot is here ${'padding '.repeat(400)}`);
    const [hit] = (await search({ query: 'ocelot', conversation_id: id })).filter((h) => h.role === 'user');
    assert.ok(hit.snippet.length < 300, hit.snippet);
    assert.deepEqual(highlighted(hit), ['ocelot']);
  });

  test('a query that cannot be searched, a bad limit, an unknown conversation: clear errors', async () => {
    for (const query of ['', '   ', '!!! ?? ---', 'x'.repeat(501)]) {
      const reply = await client.request({ type: 'search_messages', query });
      assert.equal(reply.status, 'error', JSON.stringify(query));
      assert.equal(reply.code, 'invalid_request');
      assert.match(String(reply.error), /query/);
    }
    const limit = await client.request({ type: 'search_messages', query: 'zebra', limit: 0 });
    assert.equal(limit.code, 'invalid_request');
    const unknown = await client.request({ type: 'search_messages', query: 'zebra', conversation_id: 'no-such' });
    assert.equal(unknown.code, 'not_found');
  });

  test('limit is clamped to 100', async () => {
    const reply = await client.request({ type: 'search_messages', query: 'zebra', limit: 100_000 });
    assert.equal(reply.status, 'ok');
  });

  test("a webhook account finds only its own conversations' messages, as get_messages lets it see", async () => {
    const editorId = await chat('the pelican report is due');
    const posted = await postJson(`${svc.httpUrl}/hooks/acme`, { message: 'pelican order for acme' });
    assert.equal(posted.status, 202, posted.text);
    const hookId = (posted.body!.data as { conversation_id: string }).conversation_id;
    const account: OpenSession = svc.service.openSession({ source: { kind: 'webhook', account: 'acme' }, canAnswerPermissions: false, send: () => undefined });
    try {
      await waitFor(async () => (await search({ query: 'pelican' })).some((h) => h.conversation_id === hookId), 'the webhook message stored');
      const theirs = await search({ query: 'pelican' }, account);
      assert.ok(theirs.length > 0);
      assert.ok(
        theirs.every((h) => h.conversation_id === hookId),
        JSON.stringify(theirs),
      );
      const mine = await search({ query: 'pelican' });
      assert.ok(mine.some((h) => h.conversation_id === editorId) && mine.some((h) => h.conversation_id === hookId), 'the user sees both');
      const other = (await account.request({ type: 'search_messages', query: 'pelican', conversation_id: editorId })) as { code?: string };
      assert.equal(other.code, 'not_found');
    } finally {
      account.close();
    }
  });
});

async function exportAll(frame: Record<string, unknown>): Promise<{ text: string; pieces: Piece[]; frames: number[] }> {
  const pieces: Piece[] = [];
  const frames: number[] = [];
  let next: number | null = 0;
  let until: string | undefined;
  while (next !== null) {
    const reply = await client.request({ type: 'export_conversation', ...frame, ...(next > 0 ? { offset: next, until } : {}) });
    assert.equal(reply.status, 'ok', JSON.stringify(reply).slice(0, 500));
    frames.push(Buffer.byteLength(JSON.stringify(reply)));
    const piece = reply.data as Piece;
    pieces.push(piece);
    until = piece.until;
    next = piece.next_offset;
  }
  return { text: pieces.map((p) => p.text).join(''), pieces, frames };
}

describe('export_conversation', () => {
  test("a webhook account cannot export a conversation that is not its own (it would hand over the user's whole history)", async () => {
    const editorId = await chat('the owner keeps this private: ibis');
    const account: OpenSession = svc.service.openSession({ source: { kind: 'webhook', account: 'acme' }, canAnswerPermissions: false, send: () => undefined });
    try {
      for (const format of ['markdown', 'json']) {
        const refused = (await account.request({ type: 'export_conversation', conversation_id: editorId, format })) as { status: string; code?: string; data?: unknown };
        assert.equal(refused.status, 'error', JSON.stringify(refused));
        assert.equal(refused.code, 'not_found');
        assert.ok(!JSON.stringify(refused).includes('ibis'), 'nothing of the conversation in the answer');
      }
    } finally {
      account.close();
    }
  });

  test("a webhook account cannot take the owner's next piece made ahead (offset and until of a download under way)", async () => {
    // Text that needs escaping everywhere: pieces of 131,072 characters, so the download has a second piece,
    // made ahead once the first was answered.
    const editorId = await chat(`ibis ${'\u0001'.repeat(150_000)}`);
    const first = await client.request({ type: 'export_conversation', conversation_id: editorId, format: 'markdown' });
    const piece = first.data as Piece;
    assert.ok(piece.next_offset !== null, 'a second piece exists');
    await new Promise((resolve) => setImmediate(resolve));
    const account: OpenSession = svc.service.openSession({ source: { kind: 'webhook', account: 'acme' }, canAnswerPermissions: false, send: () => undefined });
    try {
      const refused = (await account.request({ type: 'export_conversation', conversation_id: editorId, format: 'markdown', offset: piece.next_offset, until: piece.until })) as {
        status: string;
        code?: string;
      };
      assert.equal(refused.status, 'error', JSON.stringify(refused).slice(0, 300));
      assert.equal(refused.code, 'not_found');
    } finally {
      account.close();
    }
    // The owner's download goes on with the piece made ahead.
    const second = await client.request({ type: 'export_conversation', conversation_id: editorId, format: 'markdown', offset: piece.next_offset, until: piece.until });
    assert.equal(second.status, 'ok');
  });

  test('markdown: tool outputs in fences longer than any backtick run inside, so the output comes back whole', async () => {
    const tricky = 'line one\n```\nnot the end\n`````\nstill inside ``\n';
    await writeFile(join(svc.workspace, 'tricky.md'), tricky);
    svc.fake.script({ tool_calls: [{ name: 'read_file', arguments: { path: 'tricky.md' } }] }, { text: 'I read it.' });
    const id = await chat('Please read tricky.md');
    const { text, pieces } = await exportAll({ conversation_id: id, format: 'markdown' });
    assert.equal(pieces[0].file_name, 'Please read tricky md.md');
    assert.equal(pieces[0].mime_type, 'text/markdown');
    assert.match(text, /^# Please read tricky\.md\n/);
    assert.match(text, /## You · .*\n\nPlease read tricky\.md/);
    assert.match(text, /## Assistant · .*\n\nI read it\./);
    assert.match(text, /### Tool call: read_file/);
    const result = /### Tool result: read_file \(ok\)[^\n]*\n\n(`{3,})\n([\s\S]*?)\n\1\n/.exec(text);
    assert.ok(result, text);
    assert.equal(result[1], '``````', 'one longer than the longest run (five) inside');
    assert.ok(result[2].includes(tricky.trimEnd()), result[2]);
  });

  test('json: a version field and every message, tool calls and results included, as get_messages gives them', async () => {
    svc.fake.script({ tool_calls: [{ name: 'list_directory', arguments: { path: '.' } }] }, { text: 'Listed.' });
    const id = await chat('list the files');
    await chat('thanks', id);
    const { text, pieces } = await exportAll({ conversation_id: id, format: 'json' });
    assert.equal(pieces[0].mime_type, 'application/json');
    const doc = JSON.parse(text) as { format: string; version: number; conversation: { id: string; title: string }; messages: unknown[] };
    assert.equal(doc.format, 'remote-assistant.conversation');
    assert.equal(doc.version, 1);
    assert.equal(doc.conversation.id, id);
    assert.equal(doc.conversation.title, 'list the files');
    const stored = await client.request({ type: 'get_messages', conversation_id: id, include_tools: true, limit: 500 });
    assert.deepEqual(doc.messages, (stored.data as { messages: unknown[] }).messages);
    assert.equal(doc.messages.length, 6, 'user, tool call, tool result, assistant, user, assistant');
  });

  test('a big conversation comes in pieces, each frame under 1 MiB, fitting together even while it grows', async () => {
    // Control characters are escaped to six bytes each in the frame's JSON: the worst case for a piece.
    const big = `${'\u0001'.repeat(150_000)} end of the big message`;
    const id = await chat(big);
    const first = await client.request({ type: 'export_conversation', conversation_id: id, format: 'json' });
    const piece = first.data as Piece;
    assert.ok(piece.next_offset !== null, 'more than one piece');
    await chat('a message after the export began', id);
    const rest = await exportAll({ conversation_id: id, format: 'json', offset: piece.next_offset, until: piece.until });
    // Markdown holds the characters as they are: the frames carry them escaped.
    const { frames, pieces } = await exportAll({ conversation_id: id, format: 'markdown' });
    assert.ok(pieces.length > 1);
    for (const bytes of frames) assert.ok(bytes < 1024 * 1024, `a frame of ${bytes} bytes`);
    const doc = JSON.parse(piece.text + rest.text) as { messages: { content: string }[] };
    assert.equal(doc.messages.length, 2, 'the message sent after the first piece is not in this export');
    assert.equal(doc.messages[0].content, big);
  });

  test('pieces of texts full of escapes, emoji astride their ends, join to a fresh rendering; every frame on the wire under 1 MiB and JSON', async () => {
    const tricky = 'say "hi" \\ and \\\\ twice; \ud800 lone \udc00 halves; \u0001\u001f\u007f\n\t\r é 漢字 😀 \u2028 ';
    const messages = [tricky.repeat(4000), '😀'.repeat(100_000), '\u0001'.repeat(120_000), `x${'😀'.repeat(100_000)}`, `${'"\\'.repeat(60_000)}😀`];
    let id: string | undefined;
    for (const message of messages) id = await chat(message, id);
    const { store } = svc.service;
    const payloads: Buffer[] = [];
    const onFrame = (data: Buffer) => payloads.push(data);
    client.socket.on('message', onFrame);
    try {
      for (const format of ['markdown', 'json'] as const) {
        payloads.length = 0;
        const { text, pieces } = await exportAll({ conversation_id: id, format });
        const fresh = renderExport(store.conversations.get(id!)!, await clientMessagesOf(await store.messages.after(id!, 0), store.usage), format);
        assert.ok(text === fresh, `${format}: the joined pieces are a fresh rendering`);
        // A message's text is stored well-formed (s20: lone-surrogates.test.ts): its lone surrogates are U+FFFD.
        if (format === 'markdown') assert.ok(fresh.includes('\ufffd lone \ufffd halves'), 'lone surrogates come as U+FFFD, as stored');
        assert.ok(pieces.length > 2, `${format}: ${pieces.length} pieces`);
        assert.equal(payloads.length, pieces.length, 'one frame a piece');
        for (const [i, payload] of payloads.entries()) {
          // The frame's header adds at most 10 bytes to its payload.
          assert.ok(payload.length + 10 < 1024 * 1024, `${format}: a frame of ${payload.length} bytes`);
          const piece = (JSON.parse(payload.toString()) as { data: Piece }).data;
          assert.equal(piece.text, fresh.slice(piece.offset, piece.next_offset ?? fresh.length));
          assert.equal(piece.offset, i === 0 ? 0 : pieces[i - 1].next_offset);
          assert.equal(piece.total_chars, fresh.length);
          if (piece.next_offset !== null) assert.ok(!/[\ud800-\udbff]$/.test(piece.text), 'no piece ends between the halves of a pair');
        }
      }
    } finally {
      client.socket.off('message', onFrame);
    }
  });

  test('bad requests: an unknown conversation, a bad format, a later piece without its until', async () => {
    assert.equal((await client.request({ type: 'export_conversation', conversation_id: 'nope', format: 'json' })).code, 'not_found');
    assert.equal((await client.request({ type: 'export_conversation', conversation_id: 'nope', format: 'pdf' })).code, 'invalid_request');
    const id = await chat('short one');
    const reply = await client.request({ type: 'export_conversation', conversation_id: id, format: 'json', offset: 10 });
    assert.equal(reply.code, 'invalid_request');
    assert.match(String(reply.error), /until/);
  });
});
