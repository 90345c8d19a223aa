// kill -9 of the real command line (dist/cli.js, `npm run build` first) at several points of a start
// in an empty data directory, then a start without flags: it must open cleanly (an empty store made
// again or kept, never "damaged, run --recover"), answer with the token it wrote, and store a chat.
// The points are the files a fresh start creates, in order (service.json's lock and file, service.lock,
// history.db built aside and renamed in, its WAL, service.db's journal, the blob folder): the child is
// killed as the watcher sees each appear, so somewhere at or just after it. A creation of an empty store
// makes few fsyncs (docs/design.md, "What a start makes durable"). A kill -9 keeps the page cache, so
// this covers a killed process only, not a power loss: what an unsynced file may hold after one is
// argued in the design, not tested here.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { watch } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CLI, serve } from '../helpers/cli';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 240_000 };

let fake: FakeOpenAI;
before(async () => void (fake = await startFakeOpenAI()));
after(() => fake?.close());

/** The names a fresh start creates, in the order it creates them; one ending in '.' is a prefix (temp names). */
const POINTS = ['service.json.lock', '.service.json.', 'service.json', 'service.lock.', 'service.lock', 'history.db.new', 'history.db', 'history.db-wal', 'service.db.journal.', 'blobs'];

const matches = (name: string, point: string) => (point.endsWith('.') ? name.startsWith(point) : name === point);

/**
 * Starts `serve` in the empty `dir` and kills it (SIGKILL) when a name matching `point` appears in it, or once it printed `listening on` if it never does (the point then is past); whether it was killed
 * at the point.
 */
async function killAt(dir: string, point: string): Promise<boolean> {
  const child = spawn(process.execPath, [CLI, 'serve', '--data-dir', dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let hit = false;
  const watcher = watch(dir, (_event, name) => {
    if (!hit && typeof name === 'string' && matches(name, point)) {
      hit = true;
      child.kill('SIGKILL');
    }
  });
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
    if (out.includes('listening on')) child.kill('SIGKILL');
  });
  child.stderr!.resume();
  await exited;
  watcher.close();
  return hit;
}

test('kill -9 at any point of a fresh start: the next start opens cleanly, with no --recover, and stores a chat', LIMIT, async (t) => {
  const killedAt: string[] = [];
  for (const point of POINTS) {
    const temp = await tempDir('ra-fresh-crash-');
    t.after(temp.cleanup);
    const dir = join(temp.dir, 'data');
    await mkdir(dir);
    if (await killAt(dir, point)) killedAt.push(point);

    const proc = await serve(dir);
    try {
      const health = await fetch(`http://127.0.0.1:${proc.port}/health`);
      assert.equal(health.status, 200, `after a kill at ${point}: /health ${health.status}`);
      assert.equal(((await health.json()) as { status: string }).status, 'ok', `after a kill at ${point}`);
      const { auth_token: token } = JSON.parse(await readFile(join(dir, 'service.json'), 'utf8')) as { auth_token: string };
      const client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, token);
      const set = await client.request({ type: 'update_config', config: { base_url: fake.url, api_key: 'sk-fresh-crash-test' } });
      assert.equal(set.status, 'ok', JSON.stringify(set));
      const chat = await client.request({ type: 'chat', message: `after ${point}` });
      assert.equal(chat.status, 'ok', `after a kill at ${point}: ${JSON.stringify(chat).slice(0, 300)}`);
      const id = (chat.data as { conversation_id: string }).conversation_id;
      const messages = await client.request({ type: 'get_messages', conversation_id: id });
      assert.deepEqual((messages.data as { messages: { content: string }[] }).messages.map((m) => m.content)[0], `after ${point}`);
      client.close();
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
    // What a build aside cut short left is gone after a whole start.
    assert.ok(!(await readdir(dir)).some((name) => name.startsWith('history.db.new')), `history.db.new left after ${point}`);
  }
  // Most points are met before the start prints `listening on` (a loaded machine may run past a few).
  t.diagnostic(`killed at ${killedAt.join(', ')}`);
  assert.ok(killedAt.length >= POINTS.length / 2, `killed at ${killedAt.length} of ${POINTS.length} points`);
});
