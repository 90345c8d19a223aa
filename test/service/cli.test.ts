import assert from 'node:assert/strict';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { runCli, serve } from '../helpers/cli';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { postJson, writeConfig, TEST_TOKEN } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

let fake: FakeOpenAI;
const cleanups: (() => Promise<void>)[] = [];
before(async () => {
  fake = await startFakeOpenAI();
});
after(async () => {
  for (const cleanup of cleanups) await cleanup();
  await fake?.close();
});
async function dataDir() {
  const temp = await tempDir('ra-cli-');
  cleanups.push(temp.cleanup);
  return temp.dir;
}

test('serve starts with a fresh data dir, generates the token, and stops on SIGTERM keeping what it acknowledged', async () => {
  const dir = await dataDir();
  const proc = await serve(dir);
  const config = JSON.parse(await readFile(join(dir, 'service.json'), 'utf8'));
  assert.ok(config.auth_token.length >= 32);
  const health = await (await fetch(`http://127.0.0.1:${proc.port}/health`)).json();
  assert.equal(health.status, 'ok');
  proc.child.kill('SIGTERM');
  assert.deepEqual(await proc.exited, { code: 0, signal: null });
  assert.match(await readFile(join(dir, 'service.log'), 'utf8'), /service.stopped/);
});

test('a chat acknowledged before SIGTERM is in the history after restart', async () => {
  const dir = await dataDir();
  await writeConfig(dir, { base_url: fake.url });
  const first = await serve(dir);
  const client = await TestClient.authed(`ws://127.0.0.1:${first.port}/ws`, TEST_TOKEN);
  const reply = await client.request({ type: 'chat', message: 'remember me' });
  const conversation_id = (reply.data as { conversation_id: string }).conversation_id;
  first.child.kill('SIGTERM');
  assert.equal((await first.exited).code, 0);

  const second = await serve(dir);
  const again = await TestClient.authed(`ws://127.0.0.1:${second.port}/ws`, TEST_TOKEN);
  const messages = await again.request({ type: 'get_messages', conversation_id });
  assert.deepEqual(
    (messages.data as { messages: { content: string }[] }).messages.map((m) => m.content),
    ['remember me', 'echo: remember me'],
  );
  again.close();
  second.child.kill('SIGINT');
  assert.equal((await second.exited).code, 0);
});

test('an invalid service.json: exit 2 naming each bad field, file untouched', async () => {
  const dir = await dataDir();
  const text = JSON.stringify({ temperature: 9, permission_mode: 'maybe', channels: [{ name: 'x', type: 'tcp', port: 'high' }] });
  await writeFile(join(dir, 'service.json'), text);
  const result = await runCli(['serve', '--data-dir', dir, '--port', '0']);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /temperature/);
  assert.match(result.stderr, /permission_mode/);
  assert.match(result.stderr, /port/);
  assert.equal(await readFile(join(dir, 'service.json'), 'utf8'), text);
});

test('the port in use: a clear message and a non-zero exit', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  try {
    const result = await runCli(['serve', '--data-dir', await dataDir(), '--port', String(port)]);
    assert.equal(result.code, 3);
    assert.match(result.stderr, new RegExp(`port ${port} .*already in use`));
  } finally {
    blocker.close();
  }
});

test('a damaged service.db (its open fails after the port is bound): exit 1 with the store\'s own message, never "listening on"', async () => {
  const dir = await dataDir();
  await writeConfig(dir, {});
  await writeFile(join(dir, 'service.db'), 'not a database at all');
  const result = await runCli(['serve', '--data-dir', dir, '--port', '0']);
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /service\.db is not a readable database/);
  assert.doesNotMatch(result.stdout, /listening on/);
});

test('a second process on the same data directory gets a clear error', async () => {
  const dir = await dataDir();
  const first = await serve(dir);
  try {
    const result = await runCli(['serve', '--data-dir', dir, '--port', '0']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, new RegExp(`in use by process ${first.child.pid}`));
  } finally {
    first.child.kill('SIGTERM');
    await first.exited;
  }
});

test('everything serve creates in the data directory is private: the directory and its folders 0700 (blobs, history.db.lock), its files 0600', async () => {
  const dir = join(await dataDir(), 'data'); // created by the service
  const proc = await serve(dir);
  try {
    const token = JSON.parse(await readFile(join(dir, 'service.json'), 'utf8')).auth_token as string;
    const client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, token);
    assert.equal((await client.request({ type: 'list_conversations' })).status, 'ok');
    client.close();
    const modeOf = async (name: string) => ((await stat(join(dir, name))).mode & 0o777).toString(8);
    assert.equal(await modeOf('.'), '700');
    const names = await readdir(dir);
    for (const name of ['service.json', 'service.log', 'service.lock', 'service.db.journal.1']) assert.ok(names.includes(name), name);
    // Folders (the blob store's `blobs`) are private like the data directory itself.
    for (const name of names) assert.equal(await modeOf(name), (await stat(join(dir, name))).isDirectory() ? '700' : '600', name);
  } finally {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
});

test('a lock left by another host (a recreated container) refuses the start naming --break-lock; serve --break-lock takes it over', async () => {
  const dir = await dataDir();
  const lockFile = join(dir, 'service.lock');
  const foreign = JSON.stringify({ pid: 1, hostname: 'old-container-3f2a', started_at: '2026-01-01T00:00:00.000Z' });
  await writeFile(lockFile, foreign);

  const refused = await runCli(['serve', '--data-dir', dir, '--port', '0']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /in use by process 1 on host old-container-3f2a/);
  assert.match(refused.stderr, /serve --break-lock/);
  assert.equal(await readFile(lockFile, 'utf8'), foreign, 'the lock is left alone');

  const proc = await serve(dir, 0, {}, ['--break-lock']);
  try {
    const lock = JSON.parse(await readFile(lockFile, 'utf8'));
    assert.equal(lock.pid, proc.child.pid);
    assert.match(proc.output(), /store\.lock_broken/);
    assert.match(proc.output(), /old-container-3f2a/);
  } finally {
    proc.child.kill('SIGTERM');
    const exit = await proc.exited;
    assert.deepEqual(exit, { code: 0, signal: null }, `serve --break-lock did not stop cleanly:\n${proc.output()}`);
  }
});

test('user add stores an scrypt hash, never the password, and the user can log in', async () => {
  const dir = await dataDir();
  const password = 'a long enough password';
  const added = await runCli(['user', 'add', '--data-dir', dir, '--username', 'grace'], `${password}\n`);
  assert.equal(added.code, 0, added.stderr);
  const text = await readFile(join(dir, 'service.json'), 'utf8');
  assert.ok(!text.includes(password));
  assert.match(JSON.parse(text).users[0].password_hash, /^scrypt\$/);
  const short = await runCli(['user', 'add', '--data-dir', dir, '--username', 'x'], 'short\n');
  assert.equal(short.code, 2);

  const proc = await serve(dir);
  try {
    const login = await postJson(`http://127.0.0.1:${proc.port}/auth`, { username: 'grace', password });
    assert.equal(login.status, 200);
  } finally {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
});

test('8 concurrent user add processes while the running service also writes service.json: every user is kept', async () => {
  const dir = await dataDir();
  await writeConfig(dir, {});
  const proc = await serve(dir);
  try {
    const client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
    let adding = true;
    let updates = 0;
    // The service rewrites service.json over and over while the CLI processes add their users.
    const writer = (async () => {
      for (let i = 0; adding; i++) {
        const reply = await client.request({ type: 'update_config', config: { temperature: i % 2 === 0 ? 0.5 : 0.7 } });
        assert.equal(reply.status, 'ok', JSON.stringify(reply));
        updates++;
      }
    })();
    const names = Array.from({ length: 8 }, (_, i) => `user${i}`);
    const results = await Promise.all(names.map((name) => runCli(['user', 'add', '--data-dir', dir, '--username', name], 'a long enough password\n')));
    adding = false;
    await writer;
    client.close();
    for (const result of results) assert.equal(result.code, 0, result.stderr);
    assert.ok(updates > 0);
    const users = (JSON.parse(await readFile(join(dir, 'service.json'), 'utf8')).users as { username: string }[]).map((u) => u.username);
    assert.deepEqual(users.sort(), names);
  } finally {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
});

test('a service.json.lock left by a dead writer is taken over: from this host at once, from another host once older than any write', async () => {
  const dir = await dataDir();
  const lockFile = join(dir, 'service.json.lock');
  const dead = JSON.stringify({ pid: 2 ** 22 + 7, hostname: hostname(), started_at: new Date().toISOString() });
  const foreignOld = JSON.stringify({ pid: 1, hostname: 'gone-container', started_at: new Date(Date.now() - 60_000).toISOString() });
  for (const [i, lock] of [dead, foreignOld].entries()) {
    await writeFile(lockFile, lock);
    const added = await runCli(['user', 'add', '--data-dir', dir, '--username', `u${i}`], 'a long enough password\n');
    assert.equal(added.code, 0, added.stderr);
    await assert.rejects(stat(lockFile), { code: 'ENOENT' }, 'released after the write');
  }
  const users = JSON.parse(await readFile(join(dir, 'service.json'), 'utf8')).users as { username: string }[];
  assert.deepEqual(
    users.map((u) => u.username),
    ['u0', 'u1'],
  );
});

test('--allow-from overrides the tcp channel for this run; bad patterns are refused', async () => {
  const dir = await dataDir();
  // ::1 only: still bound to loopback, and now 127.0.0.1 (allowed by default) is refused before any credential.
  const proc = await serve(dir, 0, {}, ['--allow-from', '::1']);
  try {
    const refused = await fetch(`http://127.0.0.1:${proc.port}/health`);
    assert.equal(refused.status, 403);
    assert.equal((await refused.json()).code, 'unauthorized');
  } finally {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
  const config = JSON.parse(await readFile(join(dir, 'service.json'), 'utf8'));
  assert.equal(config.channels, undefined, 'the override is not written to service.json');
  for (const bad of ['10.0.0.256', '', 'example.com']) {
    const result = await runCli(['serve', '--data-dir', dir, '--port', '0', '--allow-from', bad]);
    assert.equal(result.code, 2, bad);
    assert.match(result.stderr, /invalid --allow-from/);
  }
});

test('bad arguments print the usage', async () => {
  const result = await runCli(['fly']);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /usage/);
  assert.equal((await runCli(['serve', '--port', 'abc'])).code, 2);
});
