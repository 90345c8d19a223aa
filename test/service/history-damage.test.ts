// A damaged history.db through the real command line (dist/cli.js, `npm run build` first): a lost WAL
// and a file cut to half after kill -9 are refused naming the file and `--recover`; `serve --recover`
// then serves every conversation (lost bodies read as a placeholder), takes new chats, and /health says
// degraded until the next restart.
import assert from 'node:assert/strict';
import { open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { LOST_BODY_TEXT } from '../../src/store';
import { serve, type ServeProcess } from '../helpers/cli';
import { cutSoPagesAreLost } from '../helpers/history-cut';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { writeConfig, TEST_TOKEN } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 180_000 };

let fake: FakeOpenAI;
before(async () => void (fake = await startFakeOpenAI()));
after(() => fake?.close());

async function newDir(t: TestContext): Promise<string> {
  const temp = await tempDir('ra-history-damage-');
  t.after(temp.cleanup);
  return temp.dir;
}

async function health(port: number): Promise<{ code: number; body: { status: string; reason?: string } }> {
  const res = await fetch(`http://127.0.0.1:${port}/health`);
  return { code: res.status, body: (await res.json()) as { status: string; reason?: string } };
}

/** Chats `count` messages (of `bytes` characters) into one conversation; its id. */
async function chatMany(client: TestClient, prefix: string, count: number, bytes = 0, conversationId?: string): Promise<string> {
  let id = conversationId;
  for (let i = 0; i < count; i++) {
    const reply = await client.request({ type: 'chat', message: `${prefix} ${i} ${'x'.repeat(bytes)}`, ...(id ? { conversation_id: id } : {}) });
    assert.equal(reply.status, 'ok', JSON.stringify(reply).slice(0, 300));
    id = (reply.data as { conversation_id: string }).conversation_id;
  }
  return id!;
}

/** The conversation's messages' text, oldest first; `chats`: its user and assistant messages only (no compaction notice). */
async function contents(client: TestClient, conversationId: string, chats = false): Promise<string[]> {
  const answer = await client.request({ type: 'get_messages', conversation_id: conversationId, limit: 500 });
  assert.equal(answer.status, 'ok', JSON.stringify(answer).slice(0, 300));
  const messages = (answer.data as { messages: { role: string; content: string }[] }).messages;
  return messages.filter((m) => !chats || m.role === 'user' || m.role === 'assistant').map((m) => m.content);
}

/** Runs a service on `dir`, lets `write` chat through it, then kills it -9 (no checkpoint, no clean close). */
async function writeThenKill(dir: string, write: (client: TestClient) => Promise<void>): Promise<void> {
  const proc = await serve(dir);
  const client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
  try {
    await write(client);
  } finally {
    client.close();
    proc.child.kill('SIGKILL');
    await proc.exited;
  }
}

/**
 * Waits until the journal holds only its active segment. A closed segment is compacted (its file
 * deleted) only after history.db is synced, and until then `--recover` puts back every body its records
 * hold: a kill before it (a compactor seconds late on a loaded machine) leaves the journal holding every
 * body a cut can take, nothing is lost, and no conversation shows the placeholder.
 */
async function closedSegmentsCompacted(dir: string): Promise<void> {
  // Bounded: a history.db sync that fails keeps the closed segments until a next write that never comes,
  // and a test timeout alone would leave this loop (and the serve child) running.
  const deadline = Date.now() + 120_000;
  for (;;) {
    const segments = (await readdir(dir)).filter((f) => /^service\.db\.journal\.\d+$/.test(f));
    if (segments.length <= 1) return;
    if (Date.now() > deadline) assert.fail(`the journal still holds closed segments after 120 s: ${segments.join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `serve` without --recover must refuse, naming history.db and --recover (and never answer /health). */
async function assertRefused(dir: string, why: RegExp): Promise<void> {
  const outcome = await serve(dir).then(
    async (proc) => {
      const answer = await health(proc.port);
      proc.child.kill('SIGKILL');
      await proc.exited;
      return answer;
    },
    (err: Error & { code?: number; output?: string }) => err,
  );
  if ('body' in outcome) assert.fail(`serve started on a damaged history.db: /health answered ${outcome.code} ${JSON.stringify(outcome.body)}`);
  assert.equal(outcome.code, 1, outcome.message);
  assert.match(String(outcome.output), /history\.db/);
  assert.match(String(outcome.output), why);
  assert.match(String(outcome.output), /serve --recover/);
}

/**
 * The checks after `serve --recover`: degraded, every conversation readable (one of `ids` with the
 * placeholder: the damaged one), 20+ chats, a restart clears the notice.
 */
async function checkRecovered(dir: string, ids: string[]): Promise<void> {
  let proc: ServeProcess | undefined = await serve(dir, 0, {}, ['--recover']);
  try {
    const degraded = await health(proc.port);
    assert.equal(degraded.code, 503, JSON.stringify(degraded.body));
    assert.equal(degraded.body.status, 'degraded');
    assert.match(String(degraded.body.reason), /history\.db/);

    const client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
    let damaged: string | undefined;
    for (const id of ids) if ((await contents(client, id)).includes(LOST_BODY_TEXT)) damaged ??= id;
    assert.ok(damaged, 'a conversation shows the placeholder for its lost bodies');
    const exported = await client.request({ type: 'export_conversation', conversation_id: damaged, format: 'markdown' });
    assert.equal(exported.status, 'ok', JSON.stringify(exported).slice(0, 300));
    assert.match((exported.data as { text: string }).text, /lost in a damaged history file/);

    // New chats: in the damaged conversation (its history goes to the model, placeholders and all) and in new ones.
    // The placeholder reaches the model in one of these chats' requests, not necessarily the last: when the
    // damaged conversation kept a body of 150,000 characters (the cut lost only its reply), that history
    // is larger than the window, so the first chat has it summarised (the placeholder is in the summariser's
    // request) and the fake model's echo of it, a "summary" as large, is then left out of every later
    // request to fit the window. Which bodies the cut loses depends on where their pages sit in the file.
    const before = fake.requests.length;
    await chatMany(client, 'after recovery', 10, 0, damaged);
    const given = fake.requests.slice(before).some((r) => JSON.stringify(r).includes(LOST_BODY_TEXT));
    assert.ok(given, 'the model is given the placeholder');
    for (let i = 0; i < 3; i++) await chatMany(client, `fresh ${i}`, 4);
    const after = await contents(client, damaged);
    // In that case each of these chats also stores a compaction's notice (the stored "summary" does not fit
    // the window either) between its message and its reply: the chat's own two messages come last.
    assert.deepEqual((await contents(client, damaged, true)).slice(-2), ['after recovery 9 ', 'echo: after recovery 9 ']);
    assert.equal((await health(proc.port)).code, 503, 'degraded until restarted');
    client.close();
    proc.child.kill('SIGTERM');
    assert.equal((await proc.exited).code, 0);

    // Restarted without --recover: the store is whole again (placeholders stored as bodies).
    proc = await serve(dir);
    const again = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
    assert.equal((await health(proc.port)).code, 200);
    assert.deepEqual(await contents(again, damaged), after);
    for (const id of ids) assert.ok((await contents(again, id)).length > 0);
    again.close();
  } finally {
    proc?.child.kill('SIGTERM');
    await proc?.exited;
  }
}

test(
  'history.db loses its WAL after writes: refused; serve --recover takes new chats (keys above every one referred to), lost bodies read as a placeholder, /health degraded until restart',
  LIMIT,
  async (t) => {
    const dir = await newDir(t);
    await writeConfig(dir, { base_url: fake.url, model: 'fake-model' });
    const ids: string[] = [];
    await writeThenKill(dir, async (client) => {
      ids.push(await chatMany(client, 'before', 12));
    });
    // The WAL held every body (no checkpoint yet): gone, as after a disk fault or a careless copy.
    await rm(join(dir, 'history.db-wal'));
    await assertRefused(dir, /missing message bodies that were acknowledged/);
    await checkRecovered(dir, ids);
  },
);

test('history.db cut to half after kill -9: refused at open (never served with /health ok); serve --recover rebuilds it from what it still gives', LIMIT, async (t) => {
  const dir = await newDir(t);
  await writeConfig(dir, { base_url: fake.url, model: 'fake-model' });
  const ids: string[] = [];
  await writeThenKill(dir, async (client) => {
    // About 10 MB of bodies (each conversation one chat: no history growing with each): several WAL
    // checkpoints into history.db, the last bodies still in the WAL.
    for (let i = 0; i < 32; i++) ids.push(await chatMany(client, `bulky ${i}`, 1, 150_000));
    await closedSegmentsCompacted(dir);
  });
  const file = join(dir, 'history.db');
  const size = (await stat(file)).size;
  // At least one checkpoint (SQLite's at 1,000 WAL frames; the bodies take about 1,750 pages) wrote
  // bodies into the file; how many pages it held then depends on which commit crossed the mark.
  assert.ok(size > 2 * 1024 * 1024, `history.db holds checkpointed bodies (${size} bytes)`);
  await cutSoPagesAreLost(file);
  await assertRefused(dir, /is damaged \(.*cut short\)/);
  await checkRecovered(dir, ids);
  assert.ok(
    (await readdir(dir)).some((f) => f.startsWith('history.db.damaged-')),
    'the damaged file is kept aside',
  );
});

test(
  "history.db's first page (its header and schema) and two of bodies overwritten after a clean stop: refused naming --recover (it was refused as 'could not be opened', and so was --recover); serve --recover starts, serves the rest",
  LIMIT,
  async (t) => {
    const dir = await newDir(t);
    await writeConfig(dir, { base_url: fake.url, model: 'fake-model' });
    const ids: string[] = [];
    // Stopped cleanly: its WAL checkpointed and removed (after a kill -9 the WAL holds page 1, which SQLite
    // reads from there: the damage is never seen, and the next checkpoint writes the page back whole).
    const proc = await serve(dir);
    const client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
    try {
      // Bulky chats: the journal's closed segments compacted, so their bodies are in history.db only.
      for (let i = 0; i < 32; i++) ids.push(await chatMany(client, `bulky ${i}`, 1, 150_000));
      await closedSegmentsCompacted(dir);
    } finally {
      client.close();
      proc.child.kill('SIGTERM');
    }
    assert.equal((await proc.exited).code, 0);
    assert.equal((await readdir(dir)).includes('history.db-wal'), false);
    // Page 1 and two pages of early bodies (their journal copies compacted): --recover reads the rest
    // through a new page 1 (the same tables at the same root pages); those bodies are lost.
    const file = join(dir, 'history.db');
    const pages = (await stat(file)).size / 4096;
    const fh = await open(file, 'r+');
    for (const page of [0, Math.floor(pages / 10), Math.floor(pages / 5)]) await fh.write(Buffer.alloc(4096, 0xff), 0, 4096, page * 4096);
    await fh.close();
    await assertRefused(dir, /is damaged \(it could not be opened: file is not a database\)/);
    await checkRecovered(dir, ids);
    assert.ok(
      (await readdir(dir)).some((f) => f.startsWith('history.db.damaged-')),
      'the damaged file is kept aside',
    );
  },
);
