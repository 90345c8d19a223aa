// Backup and restore of a data directory (README, "Backup and restore"), through the real command line
// (dist/cli.js, `npm run build` first) against a real `serve` child: the backup is taken while chats are
// being written, restored into a new directory, opened, and holds every message acknowledged before it.
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { openStore } from '../../src/store';
import { runCli, serve } from '../helpers/cli';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService, writeConfig, TEST_TOKEN } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

let fake: FakeOpenAI;
before(async () => void (fake = await startFakeOpenAI()));
after(() => fake?.close());

/** A temp directory removed when the test ends. */
async function newDir(t: TestContext): Promise<string> {
  const temp = await tempDir('ra-backup-');
  t.after(temp.cleanup);
  return temp.dir;
}

/** Every user message stored in the data directory, by conversation. */
async function storedUserMessages(dir: string): Promise<Set<string>> {
  const store = await openStore(dir);
  try {
    const out = new Set<string>();
    for (const c of store.conversations.list({ limit: 10_000 })) {
      for (const m of await store.messages.after(c.id, 0)) if (m.role === 'user') out.add(m.content);
    }
    return out;
  } finally {
    await store.close();
  }
}

test('backup while a service runs and chats are being written; restore into a new directory holds every message acknowledged before it', async (t) => {
  const dir = await newDir(t);
  await writeConfig(dir, { base_url: fake.url, model: 'fake-model' });
  const proc = await serve(dir);
  const client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
  const acknowledged: string[] = [];
  let writing = true;
  // Two writers, each in its own conversation, chatting without pause until told to stop.
  const writer = async (name: string) => {
    let conversationId: string | undefined;
    for (let i = 0; writing; i++) {
      const message = `${name} message ${i}`;
      const reply = await client.request({ type: 'chat', message, ...(conversationId ? { conversation_id: conversationId } : {}) });
      assert.equal(reply.status, 'ok', JSON.stringify(reply));
      conversationId = (reply.data as { conversation_id: string }).conversation_id;
      acknowledged.push(message);
    }
  };
  const writers = [writer('alpha'), writer('beta')];
  try {
    while (acknowledged.length < 10) await new Promise((resolve) => setTimeout(resolve, 20));
    const before = [...acknowledged];
    const backupDir = join(await newDir(t), 'backup');
    const made = await runCli(['backup', backupDir, '--data-dir', dir]);
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout, /backup of .* written to/);
    const countAfterBackup = acknowledged.length;
    writing = false;
    await Promise.all(writers);
    assert.ok(countAfterBackup > before.length, 'chats went on while the backup was made');
    const files = await readdir(backupDir);
    assert.ok(files.includes('service.db') && files.includes('service.json') && files.includes('backup.json'), files.join(', '));
    assert.ok(!files.some((f) => f.includes('journal') || f.includes('lock') || f === 'service.address.json'), files.join(', '));

    const restored = join(await newDir(t), 'restored');
    const restore = await runCli(['restore', backupDir, '--data-dir', restored]);
    assert.equal(restore.code, 0, restore.stderr);
    const present = await storedUserMessages(restored);
    for (const message of before) assert.ok(present.has(message), `${message} was acknowledged before the backup`);
    assert.deepEqual(JSON.parse(await readFile(join(restored, 'service.json'), 'utf8')), JSON.parse(await readFile(join(dir, 'service.json'), 'utf8')));

    // The restored directory is a working data dir: a service starts on it and serves the history.
    const again = await serve(restored);
    const reader = await TestClient.authed(`ws://127.0.0.1:${again.port}/ws`, TEST_TOKEN);
    const listed = await reader.request({ type: 'search_messages', query: 'alpha message 0' });
    assert.equal((listed.data as { hits: unknown[] }).hits.length > 0, true, JSON.stringify(listed));
    reader.close();
    again.child.kill('SIGTERM');
    assert.equal((await again.exited).code, 0);
  } finally {
    writing = false;
    await Promise.allSettled(writers);
    client.close();
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
});

test('restore is refused while a service runs on the target, and nothing there changes', async (t) => {
  const source = await newDir(t);
  await writeConfig(source, { base_url: fake.url });
  const svc = await startService({}, { dataDir: source, keepConfig: true });
  const backupDir = join(await newDir(t), 'b');
  try {
    const owner = await TestClient.authed(svc.wsUrl, svc.token);
    assert.equal((await owner.request({ type: 'chat', message: 'kept' })).status, 'ok');
    assert.equal((await owner.request({ type: 'backup', path: backupDir })).status, 'ok');
    owner.close();
  } finally {
    await svc.stop();
  }

  const target = await newDir(t);
  await writeConfig(target, { base_url: fake.url });
  const proc = await serve(target);
  try {
    // A running service may hold service.json.lock for a moment (a reload its own watcher saw): the lock's
    // temporary file comes and goes on its own; everything else must be as it was.
    const lasting = async () => (await readdir(target)).filter((name) => !name.endsWith('.tmp')).sort();
    const before = await lasting();
    const refused = await runCli(['restore', backupDir, '--data-dir', target]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /in use by process \d+.*stop that service/);
    assert.deepEqual(await lasting(), before);
  } finally {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
  // Stopped, but it holds a database: still refused, never overwritten.
  const occupied = await runCli(['restore', backupDir, '--data-dir', target]);
  assert.equal(occupied.code, 1);
  assert.match(occupied.stderr, /not empty/);
});

test('backup with no service running opens the store itself; a bad target or a half backup is refused', async (t) => {
  const dir = await newDir(t);
  const svc = await startService({ base_url: fake.url }, { dataDir: dir });
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  assert.equal((await owner.request({ type: 'chat', message: 'offline backup' })).status, 'ok');
  const refusedInside = await owner.request({ type: 'backup', path: join(dir, 'inside') });
  assert.equal(refusedInside.code, 'invalid_request');
  assert.match(String(refusedInside.error), /outside the data directory/);
  assert.equal((await owner.request({ type: 'backup', path: 'relative/dir' })).code, 'invalid_request');
  owner.close();
  await svc.stop();

  const backupDir = join(await newDir(t), 'offline');
  const made = await runCli(['backup', backupDir, '--data-dir', dir]);
  assert.equal(made.code, 0, made.stderr);
  const restored = join(await newDir(t), 'r');
  assert.equal((await runCli(['restore', backupDir, '--data-dir', restored])).code, 0);
  assert.ok((await storedUserMessages(restored)).has('offline backup'));

  const again = await runCli(['backup', backupDir, '--data-dir', dir]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /not empty/);

  const half = join(await newDir(t), 'half');
  await mkdir(half);
  await writeFile(join(half, 'service.db'), 'x');
  const notBackup = await runCli(['restore', half, '--data-dir', join(await newDir(t), 'r2')]);
  assert.equal(notBackup.code, 1);
  assert.match(notBackup.stderr, /not a finished backup/);
});

/** Every path under `dir`, relative to it (directories too), sorted. */
async function treeOf(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).sort();
}

test('backup through a symbolic link to the data directory is refused and writes nothing; a backup failing midway leaves no partial directory', async (t) => {
  const dir = await newDir(t);
  const svc = await startService({ base_url: fake.url }, { dataDir: dir });
  const owner = await TestClient.authed(svc.wsUrl, svc.token);
  assert.equal((await owner.request({ type: 'chat', message: 'kept' })).status, 'ok');
  const elsewhere = await newDir(t);
  const link = join(elsewhere, 'link-to-data');
  await symlink(dir, link);
  // Through the running service (the `backup` command) and through the CLI with no service running.
  const viaService = await owner.request({ type: 'backup', path: join(link, 'sub') });
  assert.equal(viaService.code, 'invalid_request', JSON.stringify(viaService));
  assert.match(String(viaService.error), /outside the data directory/);
  owner.close();
  await svc.stop();
  const before = await treeOf(dir);

  const refused = await runCli(['backup', join(link, 'sub'), '--data-dir', dir]);
  assert.equal(refused.code, 1, refused.stdout);
  assert.match(refused.stderr, /must be outside the data directory/);
  assert.deepEqual(await treeOf(dir), before, 'nothing was written into the data directory');
  // The data directory given through the link, the backup beside the real one: refused the other way round too.
  const holding = await runCli(['backup', join(dir, '..'), '--data-dir', link]);
  assert.equal(holding.code, 1);
  assert.match(holding.stderr, /must be outside the data directory/);

  // Fails midway: a file of the data directory named like the manifest makes its write fail after
  // the store's files and the rest are copied. The new directory is taken back whole; a given empty
  // directory is kept, emptied.
  await writeFile(join(dir, 'backup.json'), '{}');
  const fresh = join(elsewhere, 'new', 'backup');
  const failed = await runCli(['backup', fresh, '--data-dir', dir]);
  assert.equal(failed.code, 1, failed.stdout);
  assert.match(failed.stderr, /EEXIST/);
  assert.deepEqual(await readdir(elsewhere), ['link-to-data'], 'no partial backup left');
  const empty = join(elsewhere, 'empty');
  await mkdir(empty);
  assert.equal((await runCli(['backup', empty, '--data-dir', dir])).code, 1);
  assert.deepEqual(await readdir(empty), []);
});
