// The warm-up's practice turn (Service.practise, Agent.practiceTwin, commands/turns/practice-turn.ts):
// once the store is open, the service runs one streamed chat of the real turn code over a scratch store (store/scratch.ts) with the configured
// provider's SDK and a canned fetch, so a chat sent right after start does not run that code for the
// first time (issue 25). It must be seen nowhere: no byte of the data directory, no row, no log line
// but service.warmed_up, no provider request, no event; a chat meanwhile does not wait for it; stop()
// during it is clean; its tools refuse every call and its blobs stay in memory. `holdPractice` holds it
// at its provider call, where a test looks.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { existsSync } from 'node:fs';
import { Service } from '../../src/service';
import { createPracticeToolRegistry } from '../../src/agent/toolbox';
import type { Provider } from '../../src/agent/providers/types';
import { openScratchStore } from '../../src/store/scratch';
import { runPracticeTurn, type PracticeAnnouncements } from '../../src/commands/turns/practice-turn';
import type { ServiceEvent } from '../../src/protocol';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { startService, writeConfig, type RunningService } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

/** Every file of the data directory (service.log apart) with a hash of its bytes. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const walk = async (folder: string) => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.name !== 'service.log')
        files.set(
          relative(dir, path),
          createHash('sha256')
            .update(await readFile(path))
            .digest('hex'),
        );
    }
  };
  await walk(dir);
  return files;
}

const logOf = (svc: RunningService) => readFile(join(svc.dataDir, 'service.log'), 'utf8');

/** Rows of the real store's tables a turn writes. */
function counts(svc: RunningService): Record<string, unknown> {
  const { db } = svc.service.store;
  return db.get('SELECT (SELECT count(*) FROM conversations) AS conversations, (SELECT count(*) FROM messages) AS messages, (SELECT count(*) FROM usage) AS usage') ?? {};
}

/** A service whose practice turn stops at its provider call until `release`; `reached` resolves once it got there. */
async function heldService(fakeUrl: string, options: { dataDir?: string; config?: Record<string, unknown> } = {}) {
  let reachedIt!: () => void;
  const reached = new Promise<void>((resolve) => (reachedIt = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const svc = await startService(
    { provider: 'openai', model: 'fake-model', base_url: fakeUrl, ...options.config },
    {
      dataDir: options.dataDir,
      holdPractice: () => {
        reachedIt();
        return released;
      },
    },
  );
  return { svc, reached, release };
}

test('the practice turn runs the turn code and writes nothing: the data directory byte for byte, no row, no log line, no provider request, no event', async () => {
  const fake = await startFakeOpenAI();
  const { svc, reached, release } = await heldService(fake.url);
  try {
    const seqAtStart = svc.service.store.db.stats().lastSeq;
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    await reached;
    const before = await snapshot(svc.dataDir);
    const rows = counts(svc);
    const log = await logOf(svc);
    const history = await svc.service.store.history.stats();
    release();
    await waitFor(async () => (await logOf(svc)).includes('service.warmed_up'), 'the end of the warm-up', 10_000);

    assert.deepEqual(await snapshot(svc.dataDir), before, 'no file changed or appeared');
    assert.deepEqual(counts(svc), rows);
    assert.deepEqual(rows, { conversations: 0, messages: 0, usage: 0 });
    assert.equal(svc.service.store.db.stats().lastSeq, seqAtStart, 'nothing journaled');
    const historyAfter = await svc.service.store.history.stats();
    assert.equal(historyAfter.maxKey, history.maxKey, 'no body stored in history.db');
    assert.equal(historyAfter.syncs, history.syncs, "no fsync of history.db's worker");
    const added = (await logOf(svc)).slice(log.length).trim().split('\n');
    assert.deepEqual(
      added.map((line) => (JSON.parse(line) as { event: string }).event),
      ['service.warmed_up'],
    );
    assert.equal(fake.requests.length, 0, 'no request reached the provider');
    assert.deepEqual(client.frames, [], 'no event reached a client');
    client.close();
    // It ran: the real database has the turn's statements prepared ahead (the first chat finds them).
    const prepared = svc.service.store.db.statementTexts();
    assert.ok(
      prepared.some((sql) => sql.startsWith('INSERT INTO messages')),
      `the turn's statements are prepared on the real database: ${prepared.join(' | ')}`,
    );
  } finally {
    release();
    await svc.dispose();
    await fake.close();
  }
});

test('the first real chats after the practice prepare no statement of their own on the real database', async () => {
  const fake = await startFakeOpenAI();
  let asked = 0;
  const svc = await startService(
    { provider: 'openai', model: 'fake-model', base_url: fake.url },
    {
      holdPractice: () => {
        asked += 1;
        return Promise.resolve();
      },
    },
  );
  try {
    assert.equal(await svc.service.warmedUp, true);
    assert.equal(fake.requests.length, 0, 'no request reached the provider');
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    try {
      const before = new Set(svc.service.store.db.statementTexts());
      for (const message of ['hello', 'and again']) {
        const reply = await client.request({ type: 'chat', message, stream: true });
        assert.equal(reply.status, 'ok', JSON.stringify(reply));
      }
      // Before s16 the history cache's read of a reply's seq (run at the loop's next check phase, after
      // the practice had listed its statements) was prepared by the first chat.
      assert.deepEqual(
        svc.service.store.db.statementTexts().filter((sql) => !before.has(sql)),
        [],
      );
      assert.equal(asked, 1, "the practice's provider calls");
    } finally {
      client.close();
    }
  } finally {
    await svc.dispose();
    await fake.close();
  }
});

test('a chat sent while the practice turn is under way stops it, is answered correctly, and only it is stored', async () => {
  const fake = await startFakeOpenAI();
  fake.setDefault(() => ({ text: 'The real answer.', chunks: 3 }));
  const { svc, reached, release } = await heldService(fake.url);
  try {
    await reached;
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    try {
      // Never released: the chat does not wait for the practice, it stops it (its code is the chat's to compile now).
      const reply = await client.request({ type: 'chat', message: 'hello', stream: true });
      assert.equal(reply.status, 'ok', JSON.stringify(reply));
      const { response, conversation_id: conversationId } = reply.data as { response: string; conversation_id: string };
      assert.equal(response, 'The real answer.');
      assert.equal(fake.requests.length, 1);
      // Said as cut short, not as warmed up: the steps after the practice never ran.
      await waitFor(async () => (await logOf(svc)).includes('service.warm_up_cut_short'), 'the end of the warm-up, the practice stopped by the chat', 10_000);
      assert.doesNotMatch(await logOf(svc), /warm_up_failed|service\.warmed_up/);
      const listed = await client.request({ type: 'list_conversations' });
      assert.deepEqual(
        (listed.data as { conversations: { id: string }[] }).conversations.map((c) => c.id),
        [conversationId],
      );
      const messages = await client.request({ type: 'get_messages', conversation_id: conversationId });
      assert.deepEqual(
        (messages.data as { messages: { role: string; content: string }[] }).messages.map((m) => [m.role, m.content]),
        [
          ['user', 'hello'],
          ['assistant', 'The real answer.'],
        ],
      );
      assert.deepEqual(counts(svc), { conversations: 1, messages: 2, usage: 1 });
    } finally {
      client.close();
    }
  } finally {
    release();
    await svc.dispose();
    await fake.close();
  }
});

test('stop() during the practice turn is clean: it ends, logs no failure, and the data directory opens again empty', async () => {
  const fake = await startFakeOpenAI();
  const temp = await tempDir('ra-practice-');
  try {
    const { svc, reached } = await heldService(fake.url, { dataDir: temp.dir });
    await reached;
    // Never released: stop cuts the practice short.
    await svc.stop();
    const log = await logOf(svc);
    assert.match(log, /service\.stopped/);
    // From listening on (a warning of the open, service.json's mode, is not the practice's).
    assert.doesNotMatch(log.slice(log.indexOf('service.listening')), /warm_up_failed|"level":"(warn|error)"/);
    const again = await Service.open({ dataDir: temp.dir, host: '127.0.0.1', port: 0 });
    try {
      assert.equal(await again.store.problem(), null);
      assert.equal(again.store.conversations.list({ limit: 50 }).length, 0);
    } finally {
      await again.stop();
    }
  } finally {
    await temp.cleanup();
    await fake.close();
  }
});

test('a chat running when the practice would begin keeps it from beginning (it would run beside the chat)', async () => {
  const fake = await startFakeOpenAI();
  fake.setDefault(() => ({ text: 'The real answer, slowly.', chunks: 6, chunkDelayMs: 400 }));
  let reachedAt = 0;
  const svc = await startService(
    { provider: 'openai', model: 'fake-model', base_url: fake.url },
    {
      holdPractice: () => {
        reachedAt ||= Date.now();
        return Promise.resolve();
      },
    },
  );
  try {
    // Sent right after start: still running (2.4 s) when the warm-up reaches its practice.
    await svc.service.agent.chat({ message: 'hello', source: { kind: 'lan' }, stream: true, worktree: false });
    const chatDone = Date.now();
    assert.ok(reachedAt === 0 || reachedAt >= chatDone, `the practice asked its provider ${chatDone - reachedAt} ms before the chat ended`);
  } finally {
    await svc.dispose();
    await fake.close();
  }
});

test('stop() ends when the history worker stopped before the practice (the scratch store is refused, not waited for)', async () => {
  const fake = await startFakeOpenAI();
  const temp = await tempDir('ra-practice-');
  try {
    await writeConfig(temp.dir, { provider: 'openai', model: 'fake-model', base_url: fake.url });
    const service = await Service.open({ host: '127.0.0.1', port: 0, dataDir: temp.dir });
    // The worker gone (as test/store/history.test.ts makes it): the service stays up, degraded.
    await (service.store.history as unknown as { channel: { end: () => Promise<void> } }).channel.end();
    await service.start();
    await waitFor(async () => (await readFile(join(temp.dir, 'service.log'), 'utf8')).includes('warm_up'), 'the warm-up to end', 15_000);
    let stopped = false;
    const stopping = service.stop().then(() => (stopped = true));
    await Promise.race([stopping, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    assert.equal(stopped, true, 'stop() still pending 10 s later');
  } finally {
    await temp.cleanup();
    await fake.close();
  }
});

test("the practice's tools refuse every call without asking anyone, and its store's blobs stay in memory: a practice whose answer asks tools writes nothing", async () => {
  const fake = await startFakeOpenAI();
  const workspace = await tempDir('ra-practice-workspace-');
  // permission_mode allow: were a practice's tool let through, it would run at once, asking no one.
  const { svc, release } = await heldService(fake.url, { config: { permission_mode: 'allow', workspace: workspace.dir } });
  try {
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const before = await snapshot(svc.dataDir);
    const scratch = await openScratchStore(svc.service.store);
    let asked = 0;
    // An answer that asks for tools (today's canned answer asks none): a file written, a command run, the todo plan.
    const provider: Provider = {
      name: 'openai',
      complete: async () => {
        asked += 1;
        if (asked > 1) return { text: 'done', tool_calls: [], finish_reason: 'stop' };
        return {
          text: '',
          finish_reason: 'tool_calls',
          tool_calls: [
            { id: 'w', name: 'write_file', arguments: { path: 'written.txt', content: 'by the practice' } },
            { id: 'r', name: 'run_command', arguments: { command: 'touch ran.txt', cwd: workspace.dir } },
            { id: 't', name: 'todo', arguments: { items: [{ text: 'a step', status: 'pending' }] } },
          ],
        };
      },
    };
    try {
      const tools = createPracticeToolRegistry(
        () => svc.service.config.current,
        scratch,
        () => [workspace.dir],
      );
      assert.ok(
        (await tools.list()).some((tool) => tool.name === 'write_file'),
        'the tools are offered as the real ones are',
      );
      await svc.service.agent.practiceTwin({ store: scratch, provider, tools }).chat({ message: 'practise', source: { kind: 'lan' }, stream: true, worktree: false });
      assert.equal(asked, 2, 'the model was given the refusals and answered');
      const [conversation] = scratch.conversations.list({ limit: 1 });
      const rows = await scratch.messages.after(conversation.id, 0);
      const results = rows.filter((row) => row.role === 'tool').map((row) => row.content);
      assert.equal(results.filter((content) => /practice runs no tool/.test(content)).length, 3, `each call refused: ${results.join(' | ')}`);
      const blob = await scratch.blobs.put('a blob of the practice');
      assert.equal((await scratch.blobs.get(blob.hash))?.toString(), 'a blob of the practice');
    } finally {
      await scratch.close();
    }
    assert.equal(existsSync(join(workspace.dir, 'written.txt')), false, 'write_file wrote nothing');
    assert.equal(existsSync(join(workspace.dir, 'ran.txt')), false, 'run_command ran nothing');
    assert.deepEqual(await snapshot(svc.dataDir), before, 'no file of the data directory changed or appeared (no blob)');
    assert.deepEqual(client.frames, [], 'no event reached a client (no permission asked)');
    client.close();
  } finally {
    release();
    await svc.dispose();
    await workspace.cleanup();
    await fake.close();
  }
});

test("the practice runs as a client's chat: its own follower's frames are made (the reply's events, turn.ended, the row's conversation.updated), and no client hears them", async () => {
  const fake = await startFakeOpenAI();
  const { svc, release } = await heldService(fake.url);
  try {
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const scratch = await openScratchStore(svc.service.store);
    const framed: string[] = [];
    const provider: Provider = {
      name: 'openai',
      complete: async (request) => {
        request.onDelta?.('a practised ');
        request.onDelta?.('reply');
        return { text: 'a practised reply', tool_calls: [], finish_reason: 'stop' };
      },
    };
    try {
      const twinOf = (announce: PracticeAnnouncements) =>
        svc.service.agent.practiceTwin({
          store: scratch,
          provider,
          tools: createPracticeToolRegistry(
            () => svc.service.config.current,
            scratch,
            () => [],
          ),
          ...announce,
        });
      const response = await runPracticeTurn(twinOf, scratch, (event: ServiceEvent) => framed.push(event.event), new AbortController().signal);
      assert.equal(response, 'a practised reply');
    } finally {
      await scratch.close();
    }
    // conversation.updated too: the row's announcement, which the first chat's sender hears (its path was cold).
    for (const event of ['chat.message', 'chat.delta', 'turn.ended', 'conversation.updated']) assert.ok(framed.includes(event), `${event} framed: ${framed.join(', ')}`);
    assert.deepEqual(client.frames, [], 'no event reached a client');
    assert.equal(svc.service.sessionCount, 1, 'the practice is no session of the door');
    client.close();
  } finally {
    release();
    await svc.dispose();
    await fake.close();
  }
});
