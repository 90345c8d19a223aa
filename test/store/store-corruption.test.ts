// A damaged byte in the middle of a journal segment is corruption, not a crash: the store refuses to
// start (naming the file, changing nothing), and `serve --recover` keeps the damaged segment aside and
// replays every readable record, before and after the damage.
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { openStore } from '../../src/store/index';
import type { Store } from '../../src/store/index';
import { serve } from '../helpers/cli';
import { captureLogger, tempDir } from '../helpers/store-utils';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 60_000 };
const RECORDS = 400;
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup();
});

async function freshDir(): Promise<string> {
  const temp = await tempDir('store-corrupt-');
  cleanups.push(temp.cleanup);
  return temp.dir;
}

const contentOf = (i: number) => `message ${i} ${'y'.repeat(i % 50)}`;

/** One conversation and RECORDS messages, each its own journal record, then a clean stop. */
async function writeRecords(dir: string): Promise<void> {
  const store = await openStore(dir);
  await store.conversations.create({ id: 'c', title: 'many', source: 'ws', created_at: new Date(0).toISOString() });
  for (let i = 0; i < RECORDS; i++) {
    await store.messages.append({ id: `m${i}`, conversation_id: 'c', role: 'user', content: contentOf(i), timestamp: new Date(1000 + i).toISOString() });
  }
  await store.close();
}

async function onlySegment(dir: string): Promise<string> {
  const names = (await readdir(dir)).filter((n) => /^service\.db\.journal\.\d+$/.test(n));
  assert.equal(names.length, 1, `one segment expected, found ${names.join(', ')}`);
  return path.join(dir, names[0]);
}

/** Flips one byte inside the record that holds message `m<index>` (its id: bodies are in history.db); returns the damaged file's bytes. */
async function flipByteOfMessage(file: string, index: number): Promise<Buffer> {
  const buf = await readFile(file);
  const at = buf.indexOf(`"m${index}"`);
  assert.ok(at > 0, 'found the record to damage');
  buf[at + 3] ^= 0x04; // inside the JSON text: the line still parses as a line, only its checksum fails
  await writeFile(file, buf);
  return buf;
}

const ids = async (store: Store) => (await store.messages.recent('c', { limit: 10_000 })).map((m) => m.id);

test('a flipped byte mid-segment: the open is refused naming the file, and no byte of it changes', LIMIT, async () => {
  const dir = await freshDir();
  await writeRecords(dir);
  const file = await onlySegment(dir);
  const damaged = await flipByteOfMessage(file, RECORDS / 2);

  const { logger, lines } = captureLogger();
  await assert.rejects(openStore(dir, { logger }), (err: Error) => {
    assert.ok(err.message.includes(file), `the error names the file: ${err.message}`);
    assert.match(err.message, /--recover/, 'the error names the recovery');
    return true;
  });
  assert.deepEqual(await readFile(file), damaged, 'the segment is unchanged');
  assert.deepEqual(
    (await readdir(dir)).filter((n) => n.startsWith('service.db.journal')),
    [path.basename(file)],
    'nothing renamed aside',
  );
  assert.equal(
    lines.some((l) => l.event === 'store.journal_truncated'),
    false,
  );

  // A torn tail after the damage does not turn it into a crash tail either.
  await writeFile(file, Buffer.concat([damaged, Buffer.from('0badc0de {"seq":')]));
  await assert.rejects(openStore(dir), /--recover/);

  // The directory lock was released: once recovered (below, via the store's option) it opens.
  const store = await openStore(dir, { recover: true });
  try {
    const expected = Array.from({ length: RECORDS }, (_, i) => `m${i}`).filter((id) => id !== `m${RECORDS / 2}`);
    assert.deepEqual(await ids(store), expected, 'every record but the damaged one');
  } finally {
    await store.close();
  }
});

test('serve --recover: starts, keeps the damaged segment aside, and serves the records before and after it', LIMIT, async () => {
  const dir = await freshDir();
  await writeRecords(dir);
  const file = await onlySegment(dir);
  const damaged = await flipByteOfMessage(file, RECORDS / 2);

  // A start that wrongly succeeds is stopped at once, so the failure is the assertion, not a hang.
  const refused = await serve(dir).then(
    (proc) => void proc.child.kill('SIGKILL'),
    (err: Error & { code?: number; output?: string }) => err,
  );
  assert.ok(refused, 'serve refuses to start');
  assert.equal(refused.code, 1);
  assert.ok(refused.output?.includes(file), `names the file: ${refused.output}`);
  assert.match(refused.output ?? '', /serve --recover/);
  assert.deepEqual(await readFile(file), damaged, 'a refused start changes nothing');

  const proc = await serve(dir, 0, {}, ['--recover']);
  try {
    const aside = (await readdir(dir)).filter((n) => n.startsWith(`${path.basename(file)}.damaged-`));
    assert.equal(aside.length, 1, 'the damaged segment is kept aside');
    assert.deepEqual(await readFile(path.join(dir, aside[0])), damaged, 'byte for byte');

    const token = JSON.parse(await readFile(path.join(dir, 'service.json'), 'utf8')).auth_token as string;
    const client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, token);
    const reply = await client.request({ type: 'get_messages', conversation_id: 'c', limit: 500 });
    const got = (reply.data as { messages: { id: string }[] }).messages.map((m) => m.id);
    assert.equal(got.length, RECORDS - 1);
    assert.ok(got.includes('m0') && got.includes(`m${RECORDS / 2 - 1}`), 'records before the damage');
    assert.ok(got.includes(`m${RECORDS / 2 + 1}`) && got.includes(`m${RECORDS - 1}`), 'records after the damage');
    assert.equal(got.includes(`m${RECORDS / 2}`), false, 'only the damaged record is missing');
    client.close();
  } finally {
    proc.child.kill('SIGTERM');
    assert.equal((await proc.exited).code, 0, proc.output());
  }

  // The journal left behind is clean: a plain start works and serves the same records.
  const again = await openStore(dir);
  try {
    assert.equal((await ids(again)).length, RECORDS - 1);
  } finally {
    await again.close();
  }
});

test('a torn end of an older segment with committed records in the next one is damage, not a crash tail', LIMIT, async () => {
  const dir = await freshDir();
  await writeRecords(dir);
  const file = await onlySegment(dir);
  const buf = await readFile(file);
  // Split the journal into two segments at a record boundary, and tear the older one's last record.
  const cut = buf.indexOf(`"m${RECORDS / 2}"`);
  const boundary = buf.lastIndexOf(0x0a, cut) + 1;
  const older = Buffer.concat([buf.subarray(0, boundary), buf.subarray(boundary, boundary + 20)]);
  const newer = buf.subarray(boundary);
  const next = file.replace(/\d+$/, (n) => String(Number(n) + 1));
  await writeFile(file, older);
  await writeFile(next, newer);

  await assert.rejects(openStore(dir), (err: Error) => err.message.includes(file));
  assert.deepEqual(await readFile(file), older);
  assert.deepEqual(await readFile(next), newer, 'the later segment is neither truncated nor renamed aside');

  const store = await openStore(dir, { recover: true });
  try {
    assert.equal((await ids(store)).length, RECORDS, 'no record lost: the torn bytes were a copy of the next record');
  } finally {
    await store.close();
  }
});

for (const kind of ['a byte turned into a newline', 'a record end (newline) overwritten'] as const) {
  test(`resync after ${kind}: refused, then recovered with only the records that byte touched lost`, LIMIT, async () => {
    const dir = await freshDir();
    await writeRecords(dir);
    const file = await onlySegment(dir);
    const buf = await readFile(file);
    const target = RECORDS / 2;
    const at = buf.indexOf(`"m${target}"`);
    let lost: string[];
    if (kind === 'a byte turned into a newline') {
      buf[at + 3] = 0x0a; // one line becomes two bad ones
      lost = [`m${target}`];
    } else {
      buf[buf.indexOf(0x0a, at)] = 0x20; // two records become one bad line
      lost = [`m${target}`, `m${target + 1}`];
    }
    await writeFile(file, buf);

    await assert.rejects(openStore(dir), (err: Error) => err.message.includes(file));
    assert.deepEqual(await readFile(file), buf);
    const store = await openStore(dir, { recover: true });
    try {
      const expected = Array.from({ length: RECORDS }, (_, i) => `m${i}`).filter((id) => !lost.includes(id));
      assert.deepEqual(await ids(store), expected);
    } finally {
      await store.close();
    }
  });
}
