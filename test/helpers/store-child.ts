// Child process for the store tests (run with `node --import tsx`):
//   hold <dir>    open the store, print "ready", close and exit when stdin ends
//   writer <dir>  append messages forever, printing each id once its write has resolved (durable)
//   blobs <dir>   put 1-3 MiB blobs of random bytes forever, printing each hash once its put has resolved
import { randomBytes } from 'node:crypto';
import { BlobStore } from '../../src/store/blob-store';
//   bulky <dir>   the same with bodies of 8-60 KB (bulkyContent), tool outputs among them
//   bulky-segments <dir>  bulky with the journal's default segments: no compaction (nor the history.db
//                 sync before it) sends held bodies to the worker early, so a group is held at a kill
//   maintain <dir> open (retention: max_days 30 at BULKY_NOW) and run maintenance passes, printing
//                 "left <n>" (messages still stored, bodies still inline) as they go
//   retire <dir>  open, set retention (max_days 30 at BULKY_NOW) and run a pass that stops at its first
//                 freeing of bodies after some of conversation 'old''s messages were deleted (between two
//                 of its batches), printing "held <n>" (its rows left in sql.js); waits there to be killed
//   cool <dir>     open (every message's metadata to move to history.db) and run maintenance passes, printing "hot <n>" (messages whose
//                 metadata is still in sql.js) as they go
//   cut-owed <dir> conversations 'c' and 'd', tool output 't0' (CUT_OUTPUT, dated 1970) whose put the worker
//                 refuses (owed), cut by retention (tool_output_days 1); prints "cut", then waits to be killed
//   cut-cold <dir> the same, its row's metadata moved to history.db (cold) before the cut
//   collect <dir>  conversations 'gone' and 'kept' with attachments and file changes (one blob shared), then
//                  'gone' deleted (printing "deleted"), its blobs collected (RA_TEST_FAULT_BLOB_COLLECT kills it in there)
//   held-collect <dir>  conversations 'first' and 'second'; in 'first' attachments 'held' (a waiting chat holds
//                  it, among HELD_MANY other ids), 'other', and 'shared' (sent again in 'second'); 'first' deleted, the
//                  rows printed ("rows <json>", heldRows), then the pass's collection killed before its first removal
//   recover <dir>  open with --recover (a damaged history.db salvaged), print "recovered", close
import { HistoryStore } from '../../src/store/history/history-store';
import { startHistoryWorker } from '../../src/store/history/start-worker';
import { openStore } from '../../src/store/index';
import type { NewMessage } from '../../src/store/index';
import { refuseFirstPut } from './refusing-worker';
import { bindAttachments } from '../../src/store/attachments';
import { BULKY_NOW, bulkyContent, COLLECT_BYTES, CUT_OUTPUT, HELD_MANY, heldRows } from './store-utils';

async function hold(dir: string): Promise<void> {
  const store = await openStore(dir);
  process.stdout.write('ready\n');
  process.stdin.resume();
  process.stdin.on('end', () => {
    void store.close().then(() => process.exit(0));
  });
}

/** Appends messages forever from `lanes` writers at once, printing each id once its write resolved (durable). */
async function appendForever(
  dir: string,
  lanes: number,
  messageOf: (i: number) => Omit<NewMessage, 'id' | 'conversation_id' | 'timestamp'>,
  segmentBytes: number | undefined = 8 * 1024,
): Promise<void> {
  // Tiny segments by default so compactions run (and get killed) while writes go on.
  const store = await openStore(dir, { segmentBytes });
  await store.conversations.create({ id: 'c', title: 'crash', source: 'ws', created_at: '2024-01-01T00:00:00.000Z' });
  process.stdout.write('ready\n');
  let next = 0;
  const lane = async (): Promise<never> => {
    for (;;) {
      const i = next++;
      const id = `m${i}`;
      await store.messages.append({ id, conversation_id: 'c', timestamp: new Date(Date.UTC(2024, 0, 1) + i).toISOString(), ...messageOf(i) });
      process.stdout.write(`${id}\n`);
    }
  };
  // Several writes in flight at once, so acknowledged records share group commits.
  await Promise.all(Array.from({ length: lanes }, lane));
}

async function blobs(dir: string): Promise<never> {
  const store = await BlobStore.open(dir);
  process.stdout.write('ready\n');
  for (let i = 0; ; i++) {
    const { hash } = await store.put(randomBytes((1 + (i % 3)) * 1024 * 1024));
    process.stdout.write(`${hash}\n`);
  }
}

const writer = (dir: string) => appendForever(dir, 4, (i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `message ${i} ${'x'.repeat(i % 200)}` }));

const bulkyMessage = (i: number): Omit<NewMessage, 'id' | 'conversation_id' | 'timestamp'> => ({
  role: i % 4 === 3 ? 'tool' : i % 2 === 0 ? 'user' : 'assistant',
  content: bulkyContent(i),
  ...(i % 4 === 3 ? { tool_name: 'read_file', data: { kind: 'result', call_id: `call-${i}`, ok: true } } : {}),
});

const bulky = (dir: string) => appendForever(dir, 3, bulkyMessage);

const bulkySegments = (dir: string) => appendForever(dir, 3, bulkyMessage, undefined);

async function maintain(dir: string): Promise<void> {
  const store = await openStore(dir, { retention: { maxDays: 30, toolOutputDays: 7 }, now: () => BULKY_NOW });
  const report = () => {
    const left = store.db.get<{ n: number; inline: number }>('SELECT count(*) AS n, count(*) - count(body_key) AS inline FROM messages');
    process.stdout.write(`left ${left?.n ?? 0} ${left?.inline ?? 0}\n`);
  };
  report();
  setInterval(report, 2).unref();
  for (;;) await store.maintenance.run();
}

async function retire(dir: string): Promise<void> {
  const store = await openStore(dir, { now: () => BULKY_NOW, maintenanceIntervalMs: 3_600_000 });
  const left = () => store.db.get<{ n: number }>("SELECT count(*) AS n FROM messages WHERE conversation_id = 'old'")?.n ?? 0;
  await store.maintenance.run();
  const before = left();
  const remove = store.history.remove.bind(store.history);
  store.history.remove = (keys) => {
    if (keys.length === 0 || left() === before) return remove(keys);
    process.stdout.write(`held ${left()}\n`);
    return new Promise<number>(() => {});
  };
  store.maintenance.setPolicy({ maxDays: 30 });
  await store.maintenance.run();
}

async function cool(dir: string): Promise<void> {
  const store = await openStore(dir, { hotMessages: 0 });
  const report = () => process.stdout.write(`hot ${store.db.get<{ n: number }>('SELECT count(*) AS n FROM messages')?.n ?? 0}\n`);
  report();
  setInterval(report, 2).unref();
  for (;;) await store.maintenance.run();
}

/** A tool output retention cuts while its body is owed (its put refused, as by a full disk): see the usage above. */
async function cutOwed(dir: string, cold: boolean): Promise<void> {
  const worker = startHistoryWorker();
  const store = await openStore(dir, { boot: { history: HistoryStore.boot(worker) }, maintenanceIntervalMs: 3_600_000, ...(cold ? { hotMessages: 0 } : {}) });
  await store.conversations.create({ id: 'c', title: 't', source: 'ws', created_at: new Date(0).toISOString() });
  await store.conversations.create({ id: 'd', title: 't', source: 'ws', created_at: new Date(0).toISOString() });
  await store.maintenance.run();
  refuseFirstPut(worker, CUT_OUTPUT.slice(0, 5), false);
  await store.messages.append({ id: 't0', conversation_id: 'c', role: 'tool', content: CUT_OUTPUT, timestamp: new Date(1).toISOString() });
  await store.history.answered();
  const key = store.db.get<{ body_key: number }>("SELECT body_key FROM messages WHERE id = 't0'")!.body_key;
  if ((await store.history.keysBetween(key, key)).length > 0) throw new Error('the put was not refused');
  if (cold) await store.maintenance.run();
  store.maintenance.setPolicy({ toolOutputDays: 1 });
  await store.maintenance.run();
  process.stdout.write('cut\n');
  process.stdin.resume();
}

async function collect(dir: string): Promise<void> {
  const store = await openStore(dir);
  const at = '2024-01-01T00:00:00.000Z';
  for (const id of ['gone', 'kept']) {
    await store.conversations.create({ id, title: id, source: 'ws', created_at: at });
    const [attachment, before] = id === 'gone' ? COLLECT_BYTES.gone : COLLECT_BYTES.kept;
    await store.blobs.holding(async (put) => {
      const { hash, size } = await put(attachment);
      await store.attachments.add({ id: `${id}-a`, hash, name: 'a.txt', mime: 'text/plain', kind: 'file', size, uploader: 'owner', created_at: at });
      await store.db.write((tx) => tx.run('UPDATE attachments SET conversation_id = ? WHERE id = ?', [id, `${id}-a`]));
      const write = { id: `${id}-w`, conversation_id: id, turn_id: 't', tool: 'write_file', root: dir, path: `${id}.txt` };
      await store.fileChanges.begin({ ...write, before_hash: (await put(before)).hash, after_hash: (await put(COLLECT_BYTES.shared[0])).hash });
    });
  }
  await store.conversations.delete('gone');
  process.stdout.write('deleted\n');
  await store.maintenance.run();
  process.stdout.write('collected\n');
  await store.close();
}

async function heldCollect(dir: string): Promise<void> {
  const store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
  await store.maintenance.run();
  const at = '2024-01-01T00:00:00.000Z';
  for (const id of ['first', 'second']) await store.conversations.create({ id, title: id, source: 'ws', created_at: at });
  for (const id of ['held', 'other', 'shared']) {
    const { hash, size } = await store.blobs.put(`${id} bytes`);
    await store.attachments.add({ id, hash, name: `${id}.txt`, mime: 'text/plain', kind: 'file', size, uploader: 'ada', created_at: at });
    await store.db.write((tx) => {
      for (const op of [...bindAttachments([id], 'first'), ...(id === 'shared' ? bindAttachments([id], 'second') : [])]) tx.run(op.sql, op.params);
    });
  }
  store.attachments.holds.hold([...Array.from({ length: HELD_MANY }, (_, i) => `waiting-${i}`), 'held']);
  await store.conversations.delete('first');
  process.stdout.write(`rows ${JSON.stringify(heldRows(store.db))}\n`);
  await store.maintenance.run(); // its collection is killed (COLLECT_FAULT_ENV), after its orphan pass's write
  process.stdout.write('collected\n');
}

async function recover(dir: string): Promise<void> {
  const store = await openStore(dir, { recover: true });
  process.stdout.write('recovered\n');
  await store.close();
}

const modes: Record<string, (dir: string) => Promise<void>> = {
  hold,
  recover,
  collect,
  'held-collect': heldCollect,
  writer,
  bulky,
  'bulky-segments': bulkySegments,
  maintain,
  blobs,
  cool,
  retire,
  'cut-owed': (dir) => cutOwed(dir, false),
  'cut-cold': (dir) => cutOwed(dir, true),
};
const [mode, dir] = process.argv.slice(2);
if (!dir || !modes[mode]) throw new Error('usage: store-child.ts hold|recover|collect|held-collect|writer|bulky|bulky-segments|maintain|retire|blobs|cool|cut-owed|cut-cold <dir>');
modes[mode](dir).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
