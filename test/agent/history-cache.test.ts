// Issue 20: the agent's cache of recent rows (agent/history-cache.ts) is bounded in bytes as well as in
// rows and conversations: a message may be a megabyte, and 64 conversations of 500 such rows were kept.
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { HistoryCache } from '../../src/agent/history-cache';
import { openStore, type MessageRow, type NewMessage, type Store } from '../../src/store';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { startService } from '../helpers/service';
import { tempDir } from '../helpers/store-utils';

const KB = 1024;

/** A messages repo in memory that counts full reads (`recent`): a forgotten conversation is read again. */
function repo() {
  const rows = new Map<string, MessageRow[]>();
  let seq = 0;
  const reads: string[] = [];
  return {
    reads,
    add(conversationId: string, kb: number): void {
      seq += 1;
      const row: MessageRow = {
        seq,
        id: `m${seq}`,
        conversation_id: conversationId,
        role: 'user',
        content: 'x'.repeat(kb * KB),
        timestamp: '',
        tool_name: null,
        user_id: null,
        data: null,
        client_key: null,
      };
      rows.set(conversationId, [...(rows.get(conversationId) ?? []), row]);
    },
    async recent(conversationId: string): Promise<MessageRow[]> {
      reads.push(conversationId);
      return [...(rows.get(conversationId) ?? [])];
    },
    async after(conversationId: string, after: number): Promise<MessageRow[]> {
      return (rows.get(conversationId) ?? []).filter((r) => r.seq > after);
    },
    seqOf(id: string): number | undefined {
      return [...rows.values()].flat().find((r) => r.id === id)?.seq;
    },
  };
}

test('past its bytes the least recently used conversations are forgotten (read again when needed); the rows are always whole', async () => {
  const messages = repo();
  const cache = new HistoryCache(messages, { maxBytes: 100 * KB });
  for (const id of ['a', 'b', 'c']) for (let i = 0; i < 2; i += 1) messages.add(id, 20);
  for (const id of ['a', 'b', 'c']) assert.equal((await cache.rows(id)).length, 2);
  // 3 x 40 KB > 100 KB: 'a', the least recently used, went; 'b' and 'c' are served from the cache.
  messages.reads.length = 0;
  await cache.rows('c');
  await cache.rows('b');
  assert.deepEqual(messages.reads, []);
  assert.equal((await cache.rows('a')).length, 2);
  assert.deepEqual(messages.reads, ['a']);
  // New rows are added to a cached conversation, and count: 'c' grows past what fits beside the others.
  messages.add('c', 50);
  assert.equal((await cache.rows('c')).length, 3);
  messages.reads.length = 0;
  await cache.rows('a');
  await cache.rows('b');
  assert.deepEqual(messages.reads, ['a', 'b']);
});

test('a conversation bigger than the whole cache is served whole but not kept', async () => {
  const messages = repo();
  const cache = new HistoryCache(messages, { maxBytes: 100 * KB });
  for (let i = 0; i < 3; i += 1) messages.add('big', 40);
  assert.equal((await cache.rows('big')).length, 3);
  assert.equal((await cache.rows('big')).length, 3);
  assert.deepEqual(messages.reads, ['big', 'big']);
});

test('rows cached before a retention cut are read again, once; with no cut since, they are not', async () => {
  const messages = repo();
  let cuts = 0;
  const cache = new HistoryCache(messages, { cuts: () => cuts });
  messages.add('c', 1);
  await cache.rows('c');
  await cache.rows('c');
  assert.deepEqual(messages.reads, ['c']);
  cuts += 1;
  await cache.rows('c');
  await cache.rows('c');
  assert.deepEqual(messages.reads, ['c', 'c']);
});

/** An in-memory messages repo with a last-write counter, for the agent's own writes through `stored`. */
function writableRepo() {
  const messages = repo();
  let lastWrite = 0;
  let seq = 1_000;
  const held: MessageRow[] = [];
  const write = (m: NewMessage): void => {
    lastWrite += 1;
    seq += 1;
    held.push({ seq, id: m.id, conversation_id: m.conversation_id, role: m.role, content: m.content, timestamp: m.timestamp, tool_name: null, user_id: null, data: null, client_key: null });
  };
  return {
    reads: messages.reads,
    lastWrite: () => lastWrite,
    write,
    /** A write of someone else's (not through the cache). */
    other: (m: NewMessage) => write(m),
    all: (conversationId: string) => held.filter((r) => r.conversation_id === conversationId),
    repo: {
      async recent(conversationId: string, options?: { limit?: number }): Promise<MessageRow[]> {
        messages.reads.push(conversationId);
        return held.filter((r) => r.conversation_id === conversationId).slice(-(options?.limit ?? 50));
      },
      async after(conversationId: string, after: number): Promise<MessageRow[]> {
        return held.filter((r) => r.conversation_id === conversationId && r.seq > after);
      },
      seqOf: (id: string) => held.find((r) => r.id === id)?.seq,
    },
  };
}

// s14 (lean14): the cache appends the agent's rows in place instead of copying its window twice a row; the
// arrays it gives out must still never change, and a caller's change of one must never reach the cache (on
// main the same array was given again while nothing was written: a change reached every later caller).
test("the rows given out never change, a caller's change of them never reaches the cache, and the window slides as a read gives it", async () => {
  const w = writableRepo();
  const cache = new HistoryCache(w.repo, { lastWrite: w.lastWrite, maxRows: 5 });
  for (let i = 0; i < 3; i += 1) w.write(message('c'));
  const handedOut: Array<{ rows: readonly MessageRow[]; copy: MessageRow[] }> = [];
  const take = (rows: readonly MessageRow[]) => handedOut.push({ rows, copy: [...rows] });
  take(await cache.rows('c'));
  for (let i = 0; i < 14; i += 1) {
    const m = message('c', i % 2 === 0 ? 'user' : 'assistant');
    cache.stored('c', [m], () => w.write(m), i % 3 === 0);
    const rows = await cache.rows('c');
    assert.deepEqual(rows, w.all('c').slice(-5), `after row ${i}`);
    take(rows);
    // Nothing written since: the rows again, not changed by what a caller did to its own array.
    const again = await cache.rows('c');
    again.push(again[0]!);
    again.reverse();
    take(again);
    assert.deepEqual(await cache.rows('c'), w.all('c').slice(-5));
  }
  assert.deepEqual(w.reads, ['c'], 'read once: the rows stored since were added, not read');
  for (const { rows, copy } of handedOut) {
    assert.equal(rows.length, copy.length);
    copy.forEach((row, i) => assert.equal(rows[i], row, 'a handed-out array was changed by the cache'));
  }
  assert.deepEqual(await cache.rows('c'), w.all('c').slice(-5));
});

test("rows cut off the window's front count out of the cache's bytes (nothing forgotten for what it no longer holds)", async () => {
  const w = writableRepo();
  // 3 rows of ~1.2 KB fit; without the cut rows counted out, 40 rows later it would be over and forget the conversation.
  const cache = new HistoryCache(w.repo, { lastWrite: w.lastWrite, maxRows: 3, maxBytes: 5 * KB });
  w.write({ ...message('c'), content: 'x'.repeat(KB) });
  await cache.rows('c');
  for (let i = 0; i < 40; i += 1) {
    const m = { ...message('c'), content: 'y'.repeat(KB) };
    cache.stored('c', [m], () => w.write(m));
    await cache.rows('c');
  }
  assert.deepEqual(w.reads, ['c']);
  assert.deepEqual(await cache.rows('c'), w.all('c').slice(-3));
});

test("two calls reading what another wrote at the same time add it once (instructionFiles reads outside the turn's queue)", async () => {
  const w = writableRepo();
  const cache = new HistoryCache(w.repo, { lastWrite: w.lastWrite });
  w.write(message('c'));
  await cache.rows('c');
  w.other(message('c', 'assistant'));
  const [a, b] = await Promise.all([cache.rows('c'), cache.rows('c')]);
  assert.deepEqual(a, w.all('c'));
  assert.deepEqual(b, w.all('c'));
  assert.deepEqual(await cache.rows('c'), w.all('c'));
});

/** A store in a temp dir with one conversation, and a cache over it that counts its reads. */
async function storeWithCache(t: { after: (fn: () => Promise<void>) => void }) {
  const { dir, cleanup } = await tempDir('history-cache-');
  const store = await openStore(dir);
  t.after(async () => {
    await store.close();
    await cleanup();
  });
  await store.conversations.create({ id: 'c', title: 'c', source: 'ws', created_at: new Date().toISOString() });
  await store.conversations.create({ id: 'other', title: 'other', source: 'ws', created_at: new Date().toISOString() });
  const reads: string[] = [];
  const counted: Pick<Store['messages'], 'recent' | 'after' | 'seqOf'> = {
    recent: (id, options) => (reads.push(`recent ${id}`), store.messages.recent(id, options)),
    after: (id, seq) => (reads.push(`after ${id}`), store.messages.after(id, seq)),
    seqOf: (id) => store.messages.seqOf(id),
  };
  const cache = new HistoryCache(counted, { lastWrite: () => store.db.lastWrite });
  return { store, cache, reads };
}

let made = 0;
function message(conversationId: string, role: NewMessage['role'] = 'user', data?: unknown): NewMessage {
  made += 1;
  return { id: `n${made}`, conversation_id: conversationId, role, content: `text ${made}`, timestamp: new Date().toISOString(), ...(data === undefined ? {} : { data }) };
}

/** What a fresh read of the conversation gives (every row, oldest first). */
function all(store: Store, conversationId: string) {
  return store.messages.recent(conversationId, { limit: 500, includeTools: true });
}

test('with nothing written since, a conversation is served without a read; what the agent stores is added as a read would give it', async (t) => {
  const { store, cache, reads } = await storeWithCache(t);
  await store.messages.append(message('c'));
  assert.equal((await cache.rows('c')).length, 1);
  assert.equal((await cache.rows('c')).length, 1);
  assert.deepEqual(reads, ['recent c']);
  // The agent's own write (a tool call with data, then a reply): not read back, equal to what a read gives.
  const call = { ...message('c', 'tool', { kind: 'call', call_id: 'x', batch: 'b', arguments: { path: 'a.ts', skip: undefined } }), tool_name: 'read_file' };
  await cache.stored('c', [call], () => store.messages.appendMany([call]));
  const reply = message('c', 'assistant');
  await cache.stored('c', [reply], () => store.messages.appendMany([reply]));
  reads.length = 0;
  const rows = await cache.rows('c');
  assert.deepEqual(reads, []);
  assert.deepEqual(rows, await all(store, 'c'));
  assert.deepEqual(rows[1].data, { kind: 'call', call_id: 'x', batch: 'b', arguments: { path: 'a.ts' } });
});

test("a message written by anyone else (not through the cache) is read, also when it came between a read and the agent's own write", async (t) => {
  const { store, cache } = await storeWithCache(t);
  await store.messages.append(message('c'));
  await cache.rows('c');
  // Stored elsewhere (the permission restart's results, a webhook's inbox): the next call must see it.
  await store.messages.append(message('c', 'assistant'));
  assert.deepEqual(await cache.rows('c'), await all(store, 'c'));
  // Between the cache's last read and the agent's write: the agent's row must not be added after a gap.
  await store.messages.append(message('c', 'assistant'));
  const mine = message('c');
  await cache.stored('c', [mine], () => store.messages.appendMany([mine]));
  assert.deepEqual(await cache.rows('c'), await all(store, 'c'));
  // Another conversation's write between them: this one's rows are still whole.
  await cache.rows('c');
  await store.messages.append(message('other'));
  const next = message('c');
  await cache.stored('c', [next], () => store.messages.appendMany([next]));
  await store.messages.append(message('c', 'assistant'));
  assert.deepEqual(await cache.rows('c'), await all(store, 'c'));
});

test('a write the store refused adds nothing', async (t) => {
  const { store, cache } = await storeWithCache(t);
  await cache.rows('c');
  const bad = { ...message('c'), role: 'nobody' as NewMessage['role'] };
  await assert.rejects(cache.stored('c', [bad], () => store.messages.appendMany([bad])));
  assert.deepEqual(await cache.rows('c'), []);
});

test("rows stored `later` (the turn's reply) are added after the journal's flush began, or at once when asked sooner; never twice, never past another write", async (t) => {
  const { store, cache, reads } = await storeWithCache(t);
  await store.messages.append(message('c'));
  await cache.rows('c');
  const next = () => new Promise((resolve) => setImmediate(resolve));
  // Asked before the check phase: added then, without a read; the deferred add that follows adds nothing more.
  const reply = message('c', 'assistant');
  const written = cache.stored('c', [reply], () => store.messages.appendMany([reply]), true);
  reads.length = 0;
  assert.deepEqual(await cache.rows('c'), await all(store, 'c'));
  await next();
  assert.deepEqual(await cache.rows('c'), await all(store, 'c'));
  assert.deepEqual(reads, []);
  await written;
  // Left to the check phase: added there, served without a read.
  const second = message('c', 'assistant');
  const stored = cache.stored('c', [second], () => store.messages.appendMany([second]), true);
  await next();
  reads.length = 0;
  assert.deepEqual(await cache.rows('c'), await all(store, 'c'));
  assert.deepEqual(reads, []);
  await stored;
  // Another write before the check phase: not added, the next call reads.
  const third = message('c', 'assistant');
  const raced = cache.stored('c', [third], () => store.messages.appendMany([third]), true);
  const elsewhere = store.messages.append(message('c'));
  await next();
  reads.length = 0;
  assert.deepEqual(await cache.rows('c'), await all(store, 'c'));
  assert.deepEqual(reads, ['after c']);
  await Promise.all([raced, elsewhere]);
});

test("rows stored `later` whose store is closed by the check phase (the warm-up's practice stopped by a first chat): nothing thrown, the conversation read again", async (t) => {
  const { store } = await storeWithCache(t);
  // The scratch store's close marks it closed at once, before the deferred add runs: its reads then throw.
  let closed = false;
  const reads: string[] = [];
  const messages: Pick<Store['messages'], 'recent' | 'after' | 'seqOf'> = {
    recent: (id, options) => (reads.push('recent'), store.messages.recent(id, options)),
    after: (id, seq) => (reads.push('after'), store.messages.after(id, seq)),
    seqOf: (id) => {
      if (closed) throw new Error('the store is closed');
      return store.messages.seqOf(id);
    },
  };
  const cache = new HistoryCache(messages, { lastWrite: () => store.db.lastWrite });
  await store.messages.append(message('c'));
  await cache.rows('c');
  const thrown: unknown[] = [];
  const onUncaught = (error: unknown) => thrown.push(error);
  process.on('uncaughtException', onUncaught);
  t.after(() => void process.off('uncaughtException', onUncaught));
  const reply = message('c', 'assistant');
  const written = cache.stored('c', [reply], () => store.messages.appendMany([reply]), true);
  closed = true;
  await new Promise((resolve) => setImmediate(resolve));
  await written;
  assert.deepEqual(thrown.map(String), []);
  reads.length = 0;
  assert.deepEqual(await cache.rows('c'), await all(store, 'c'));
  assert.deepEqual(reads, ['recent'], 'forgotten: read again whole, not served without the reply');
});

// The cache never re-read a row it held: a tool output retention cut (tool_output_days) reached the
// model whole until the conversation left the cache. A real service and a fake provider (HTTP on
// 127.0.0.1) that records what the model is given.
test('a tool output retention cut is what the model is given next, not the whole output the cache held', async (t) => {
  const fake = await startFakeOpenAI();
  const { dir, cleanup } = await tempDir('history-cache-cut-');
  // Beside the data directory, not in it (file tools do not open the service's own files).
  const workspace = `${dir}-ws`;
  await mkdir(workspace);
  const whole = Array.from({ length: 2_000 }, (_, i) => `line ${i} of the big file`).join('\n');
  await writeFile(join(workspace, 'big.txt'), whole);
  const svc = await startService({ base_url: fake.url, model: 'fake-model', workspace, permission_mode: 'allow' }, { dataDir: dir });
  t.after(async () => {
    await svc.stop();
    await fake.close();
    await cleanup();
    await rm(workspace, { recursive: true, force: true });
  });
  const { agent, store } = svc.service;
  fake.script({ tool_calls: [{ name: 'read_file', arguments: { path: 'big.txt' } }] }, { text: 'read it' });
  const conversationId = (await agent.chat({ message: 'read big.txt', source: { kind: 'lan' } })).conversation_id;
  const toolText = (request: { body: unknown }) =>
    ((request.body as { messages: Array<{ role: string; content: unknown }> }).messages.find((m) => m.role === 'tool')?.content as string | undefined) ?? '';
  assert.ok(toolText(fake.requests.at(-1)!).includes('line 1999 of the big file'), 'the model was given the whole output');

  // Retention cuts every tool output older than 0 days, once the clock has passed the output's timestamp.
  const output = (await store.messages.recent(conversationId, { includeTools: true })).find((m) => m.role === 'tool' && m.content.includes('line 1999'))!;
  while (Date.now() <= Date.parse(output.timestamp)) await new Promise((r) => setTimeout(r, 1));
  store.maintenance.setPolicy({ toolOutputDays: 0 });
  await store.maintenance.run();
  const cut = (await store.messages.get(output.id))!.content;
  assert.ok(cut.length < 1_000 && cut.includes('[cut: tool output older than 0 days]'), cut.slice(-200));

  await agent.chat({ message: 'and now?', conversationId, source: { kind: 'lan' } });
  assert.equal(toolText(fake.requests.at(-1)!), cut, 'the model is given the cut output');
});

// The review mend of lean14 tells the transcripts when the cache lets a conversation's rows go; the cache's
// own bookkeeping (a conversation moved to most recently used on every read and every stored row) is no
// letting go: told then, the transcripts dropped their kept call at every step and never reused it.
test('`forgotten` is told only when rows are let go (evicted, read again after a cut, forgotten), not by reads and stored rows', async () => {
  const w = writableRepo();
  let cuts = 0;
  const told: string[] = [];
  const cache = new HistoryCache(w.repo, { lastWrite: w.lastWrite, cuts: () => cuts, maxConversations: 2, forgotten: (id) => told.push(id) });
  for (const id of ['a', 'b', 'c']) w.write(message(id));
  await cache.rows('a');
  for (let i = 0; i < 4; i += 1) {
    const m = message('a', i % 2 === 0 ? 'user' : 'assistant');
    cache.stored('a', [m], () => w.write(m), i % 2 === 0);
    await cache.rows('a');
    await cache.rows('a');
  }
  await cache.rows('b');
  assert.deepEqual(told, [], 'reads and stored rows let nothing go');
  await cache.rows('c');
  assert.deepEqual(told, ['a'], 'the least recently used, evicted');
  cuts += 1;
  await cache.rows('b');
  assert.deepEqual(told, ['a', 'b'], 'read again after a cut');
  cache.forget('c');
  assert.deepEqual(told, ['a', 'b', 'c']);
  assert.equal(cache.holds('c'), false);
});

test('rows added ahead for a write that fails once its statements run (its record voided) are let go: the next read gives the store as it is', async (t) => {
  const { store, cache, reads } = await storeWithCache(t);
  const first = message('c');
  await store.messages.append(first);
  await cache.rows('c');
  // Its id is taken: nothing refuses it before the hand-off, its INSERT fails when applied (review20a).
  const clash = { ...message('c', 'assistant'), id: first.id };
  await assert.rejects(
    cache.stored('c', [clash], () => store.messages.appendMany([clash])),
    /UNIQUE/,
  );
  reads.length = 0;
  assert.deepEqual(await cache.rows('c'), await all(store, 'c'));
  assert.equal((await cache.rows('c')).length, 1, 'only the stored message');
  assert.deepEqual(reads, ['recent c'], 'the conversation was read again');
});
