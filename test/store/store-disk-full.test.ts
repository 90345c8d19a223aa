// A full disk (a real one: the data directory is a small tmpfs filled to the last page) must not break
// the service until a restart: writes fail with a clear error, /health says degraded, and once space
// is back the next chat succeeds, /health is ok, and every acknowledged message survives a restart.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { open, readdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { readDurable } from '../../src/commands/durable-read';
import { openStore, type NewMessage, type Store } from '../../src/store/index';
import { scanRecords } from '../../src/store/record';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService, type RunningService } from '../helpers/service';
import { captureLogger } from '../helpers/store-utils';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

/** A tmpfs allocates whole pages of this size. */
const PAGE = 4096;

let fake: FakeOpenAI;
before(async () => {
  fake = await startFakeOpenAI();
});
after(async () => {
  await fake?.close();
});

/** Mounts a tmpfs of `size` on a temp dir; null when this machine does not allow it (not root). */
async function smallDisk(size: string): Promise<{ dir: string; cleanup: () => Promise<void> } | null> {
  const temp = await tempDir('ra-diskfull-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', temp.dir], { stdio: 'pipe' });
  } catch {
    await temp.cleanup();
    return null;
  }
  return {
    dir: temp.dir,
    cleanup: async () => {
      execFileSync('umount', [temp.dir]);
      await temp.cleanup();
    },
  };
}

/** A store on a 2 MiB tmpfs holding conversation `c` (closed and unmounted after the test); null, the test skipped, when this machine cannot mount one. */
async function storeOnSmallDisk(t: TestContext): Promise<{ dir: string; filler: string; store: Store } | null> {
  const disk = await smallDisk('2m');
  if (!disk) {
    t.skip('mounting a tmpfs needs root');
    return null;
  }
  const rig = { dir: disk.dir, filler: path.join(disk.dir, 'filler'), store: await openStore(disk.dir) };
  t.after(async () => {
    await rig.store.close();
    await disk.cleanup();
  });
  await rig.store.conversations.create({ id: 'c', title: 't', source: 'ws', created_at: new Date(0).toISOString() });
  return rig;
}

/** Writes `file` until the disk refuses another byte. */
async function fillDisk(file: string): Promise<void> {
  const fh = await open(file, 'w');
  try {
    for (const chunk of [1 << 20, 1 << 12, 1]) {
      const buf = Buffer.alloc(chunk, 0x61);
      for (;;) {
        try {
          await fh.write(buf);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    await fh.close();
  }
}

async function health(svc: RunningService): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${svc.httpUrl}/health`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

type Envelope = Record<string, unknown> & { data?: { conversation_id?: string } };

test('disk full: clear server_error and /health 503 degraded; once space is back the service recovers by itself, nothing acknowledged lost', { timeout: 120_000 }, async (t) => {
  const disk = await smallDisk('8m');
  if (!disk) {
    t.skip('mounting a tmpfs needs root');
    return;
  }
  const filler = path.join(disk.dir, 'filler');
  let svc = await startService({ base_url: fake.url }, { dataDir: disk.dir });
  let client = await TestClient.authed(svc.wsUrl, svc.token);
  t.after(async () => {
    client.close();
    await svc.stop();
    await disk.cleanup();
  });
  const acked = new Map<string, string>(); // conversation id -> message

  const chat = async (message: string): Promise<Envelope> => {
    const reply = (await client.request({ type: 'chat', message })) as Envelope;
    if (reply.status === 'ok') acked.set(reply.data!.conversation_id!, message);
    return reply;
  };

  assert.equal((await chat('before the disk filled up')).status, 'ok');
  assert.deepEqual((await health(svc)).status, 200);

  await fillDisk(filler);
  // The journal's last page may still have room for a few records: chat until a write needs a new page.
  let failed: Envelope | undefined;
  for (let i = 0; i < 200 && !failed; i++) {
    const reply = await chat(`while full ${i}`);
    if (reply.status !== 'ok') failed = reply;
  }
  assert.ok(failed, 'a chat failed on the full disk');
  t.diagnostic(`chats acknowledged after the disk filled up: ${acked.size - 1}`);
  assert.equal(failed.code, 'server_error');
  assert.match(String(failed.error), /disk full/);
  assert.match(String(failed.error), /ENOSPC/);

  const degraded = await health(svc);
  assert.equal(degraded.status, 503);
  assert.equal(degraded.body.status, 'degraded');
  assert.match(String(degraded.body.reason), /disk full/);
  assert.equal(typeof degraded.body.uptime_seconds, 'number');

  // Still full: still a clear error, not a crash or a hang.
  const again = await chat('still full');
  assert.equal(again.status, 'error');
  assert.match(String(again.error), /disk full/);

  await rm(filler);
  const recovered = await chat('after space came back');
  assert.equal(recovered.status, 'ok', JSON.stringify(recovered));
  const ok = await health(svc);
  assert.equal(ok.status, 200);
  assert.equal(ok.body.status, 'ok');

  client.close();
  await svc.stop();
  svc = await startService({}, { dataDir: disk.dir, keepConfig: true });
  client = await TestClient.authed(svc.wsUrl, svc.token);
  assert.ok(acked.size >= 2);
  for (const [conversation_id, message] of acked) {
    const reply = await client.request({ type: 'get_messages', conversation_id, limit: 10 });
    assert.equal(reply.status, 'ok', `conversation of "${message}" is there: ${JSON.stringify(reply)}`);
    const contents = (reply.data as { messages: { content: string }[] }).messages.map((m) => m.content);
    assert.deepEqual(contents, [message, `echo: ${message}`]);
  }
  client.close();
});

test('disk full mid-record: the torn bytes are cut off at once, the refused record is written once space is back, the journal stays clean', { timeout: 60_000 }, async (t) => {
  const disk = await storeOnSmallDisk(t);
  if (!disk) return;
  const { filler } = disk;
  // Memory entries: written to the journal whole (message bodies go to history.db first).
  const append = (i: number) => disk.store.memory.put(`${i} ${'z'.repeat(1500)}`, { id: `m${i}`, now: new Date(i).toISOString() });

  await fillDisk(filler);
  // Records of 1.5 KiB: one of them is written in part (the rest of the segment's last page) and then refused.
  const acked: string[] = [];
  let refused: Error | undefined;
  for (let i = 0; i < 20 && !refused; i++) {
    await append(i).then(
      () => acked.push(`m${i}`),
      (err: Error) => (refused = err),
    );
  }
  assert.ok(refused, 'a write was refused');
  assert.match(refused.message, /disk full: could not write the journal \(ENOSPC\)/);
  const segment = path.join(
    disk.dir,
    (await readdir(disk.dir)).find((n) => /journal\.\d+$/.test(n))!,
  );
  const { size } = await stat(segment);
  assert.equal(scanRecords(await readFile(segment)).tail, undefined, 'no torn bytes left in the segment');
  assert.ok(size > 0);
  assert.equal(disk.store.db.stats().journalBytes, size);

  await rm(filler);
  await append(100);
  acked.push('m100');
  await disk.store.close();

  const { logger, lines } = captureLogger();
  disk.store = await openStore(disk.dir, { logger });
  for (const id of acked) assert.ok(disk.store.memory.get(id), `${id} acknowledged and present`);
  assert.equal(
    lines.some((l) => l.level === 'warn' || l.level === 'error'),
    false,
    'the journal is clean',
  );
});

test(
  'disk full for history.db only: a message the journal took is acknowledged though the worker refused its body (owed, written once space is back), and an append never fails a stored message',
  { timeout: 60_000 },
  async (t) => {
    const disk = await storeOnSmallDisk(t);
    if (!disk) return;
    const { filler } = disk;
    const message = (id: string, content: string, ms: number): NewMessage => ({ id, conversation_id: 'c', role: 'user', content, timestamp: new Date(ms).toISOString() });
    const segment = async () =>
      path.join(
        disk.dir,
        (await readdir(disk.dir))
          .filter((n) => /journal\.\d+$/.test(n))
          .sort()
          .at(-1)!,
      );
    // A tmpfs gives whole pages: the journal's last page keeps room for a small record once the disk is
    // full, while history.db's WAL needs a new page for any frame (4 KiB and its header). Padded until
    // that room is at least 2 KiB.
    for (let i = 0; ; i++) {
      const room = (PAGE - ((await stat(await segment())).size % PAGE)) % PAGE;
      if (room >= 2048) break;
      await disk.store.messages.append(message(`pad${i}`, 'p'.repeat(room + 100), i));
    }
    await fillDisk(filler);

    const outcome = await disk.store.messages.append(message('m1', 'taken by the journal', 100)).then(
      () => null,
      (err: Error) => err,
    );
    if (outcome) assert.equal(disk.store.messages.has('m1'), false, `the append failed (${outcome.message}) though its message is stored`);
    assert.equal(outcome, null, 'the journal took the message');
    assert.match(String(await disk.store.problem()), /disk full/, 'history.db refused its body');
    const read = async () => new Map((await disk.store.messages.recent('c', { limit: 100 })).map((m) => [m.id, m.content]));
    assert.equal((await read()).get('m1'), 'taken by the journal', 'read from the owed body meanwhile');

    await rm(filler);
    await disk.store.messages.append(message('m2', 'after space is back', 101));
    assert.equal(await disk.store.problem(), null);
    await disk.store.close();
    disk.store = await openStore(disk.dir);
    const after = await read();
    assert.equal(after.get('m1'), 'taken by the journal');
    assert.equal(after.get('m2'), 'after space is back');
  },
);

test(
  'disk full: a read waiting to answer only what is durable does not retry the owed writes (their writers retry; a list or search would add a write to a full disk each)',
  { timeout: 60_000 },
  async (t) => {
    const disk = await storeOnSmallDisk(t);
    if (!disk) return;
    const journal = (disk.store.db as unknown as { journal: { retry(): Promise<void> } }).journal;
    await fillDisk(disk.filler);
    let refused: Error | undefined;
    for (let i = 0; i < 20 && !refused; i++) {
      await disk.store.memory.put(`${i} ${'z'.repeat(1500)}`, { id: `r${i}`, now: new Date(i).toISOString() }).catch((err: Error) => (refused = err));
    }
    assert.ok(refused, 'a write was refused: the journal owes it');
    let retries = 0;
    const retry = journal.retry.bind(journal);
    journal.retry = () => {
      retries += 1;
      return retry();
    };
    for (let i = 0; i < 5; i++) await readDurable(disk.store);
    assert.equal(retries, 0, 'reads retried the owed writes');
    await rm(disk.filler);
  },
);
