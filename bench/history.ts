// `npm run bench -- history`: a history of 10 MB, 200 MB and more (HISTORY_BENCH_MB, e.g. "10,200,2000"),
// messages of 0.2-1.7 KB with every fourth an 8-23 KB tool output (issue 13's table). Measures the open
// (in a child process that only opens: time and resident memory added), get_messages p50, search p99,
// the longest event-loop stall during writes and a retention pass, and the integrity check made at open
// against SQLite's quick_check; each as a ratio to 10 MB. Issue 25's row ("memory added by opening a
// 10 GB history: under 150 MB, flat from 2 GB up") is printed last. Without HISTORY_BENCH_MB the sizes
// are 10 MB, 200 MB, 2 GB (about 5 minutes to generate the first time, cached after) and 10 GB only when
// a generated one is already cached (opens and reads only); generate it once with
// `HISTORY_BENCH_MB=10,2000,10000 npm run bench -- history` (about 16 minutes on the loaded machine).
// HISTORY_BENCH_PER_CONVERSATION (default 200) sets the messages per conversation: a history of many short
// conversations (e.g. 4 and 1850 MB: 100,000 conversations) measures what sql.js holds per conversation.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { openStore } from '../src/store/index';
import type { NewMessage } from '../src/store/index';
import { byteSize } from '../src/store/messages';
import type { NewUsage } from '../src/store/usage';
import { previewOf } from '../src/protocol/preview';
import { fmt, percentile } from './util';

const WORDS = [
  'deploy',
  'journal',
  'durable',
  'assistant',
  'message',
  'phone',
  'editor',
  'snapshot',
  'relay',
  'webhook',
  'permission',
  'compaction',
  'quota',
  'kernel',
  'router',
  'gradient',
  'invoice',
  'lantern',
  'meadow',
  'orbit',
];
/** Messages per conversation (HISTORY_BENCH_PER_CONVERSATION); a history of other than 200 is cached apart. */
const PER_CONVERSATION = Number(process.env.HISTORY_BENCH_PER_CONVERSATION ?? 200);
const T0 = Date.UTC(2024, 0, 1);

function words(n: number, seed: number): string {
  const out: string[] = [];
  let x = seed;
  let length = 0;
  while (length < n) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const w = WORDS[x % WORDS.length] + (x % 7 === 0 ? String(x % 1000) : '');
    out.push(w);
    length += w.length + 1;
  }
  return out.join(' ');
}

/** Where generated histories are kept between runs (HISTORY_BENCH_FRESH=1 deletes them first). */
const CACHE = '/tmp/ra-bench-cache/history';
/** The most recent messages stay in sql.js as the maintenance leaves them (90% of its 20,000 budget). */
const HOT_TAIL = 18_000;
/** Messages of a generated history the search index covers (about 2 GB); see generate. */
const SEARCHABLE = 440_000;
/** The search index's trigger (history-db.ts), put back after the messages left out of the index. */
const BODIES_AI = "CREATE TRIGGER bodies_ai AFTER INSERT ON bodies WHEN new.role <> 'tool' BEGIN INSERT INTO bodies_fts (rowid, content) VALUES (new.key, new.content); END;";
/** Above this size only the open and reads are measured (measure). */
const FULL_MAX_MB = Number(process.env.HISTORY_BENCH_FULL_MB ?? 2000);

/** Text of words (as `words`), sliced per message: generating 10 GB word by word took most of the 583 s. */
let corpus = '';
function textAt(i: number, size: number): string {
  if (corpus === '') corpus = words(4_000_000, 1);
  const from = corpus.indexOf(' ', (i * 7_919 * 131) % (corpus.length - 30_000)) + 1;
  return corpus.slice(from, from + size).trimEnd();
}

function messageAt(i: number): NewMessage {
  const c = Math.floor(i / PER_CONVERSATION);
  const tool = i % 4 === 3;
  const size = tool ? 8_000 + ((i * 7919) % 15_000) : 200 + ((i * 131) % 1500);
  return {
    id: `m${i}`,
    conversation_id: `c${c}`,
    role: tool ? 'tool' : i % 2 === 0 ? 'user' : 'assistant',
    content: textAt(i, size),
    timestamp: new Date(T0 + i * 60_000).toISOString(),
    ...(tool ? { tool_name: 'read_file', data: { kind: 'result', call_id: `call${i}`, ok: true } } : {}),
  };
}

/** A reply's usage row, as the agent records one per assistant message. */
function usageAt(m: NewMessage): NewUsage {
  return {
    message_id: m.id,
    conversation_id: m.conversation_id,
    source: 'ws',
    day: m.timestamp.slice(0, 10),
    updated_at: m.timestamp,
    provider: 'openai',
    model: 'gpt-4o-mini',
    input: 1200,
    output: 300,
    cached: 0,
    cost_micro: 360,
    estimated: false,
    calls: 1,
    context_used: 1500,
    context_window: 128_000,
  };
}

/** SQL text (no quotes in generated words or data). */
function q(v: string | null): string {
  return v === null ? 'NULL' : `'${v}'`;
}

/**
 * Generates (once; cached in CACHE between runs) a history of about `mb` megabytes, as a store that
 * ran for a long time holds it: every message but the last HOT_TAIL with its metadata cold in
 * history.db, and a usage row per reply. The cold part is written by the sqlite3 command line straight
 * into history.db (bodies, search index, cold rows), the rest through the store.
 */
async function generate(mb: number): Promise<{ dir: string; messages: number }> {
  const dir = path.join(CACHE, PER_CONVERSATION === 200 ? `${mb}mb` : `${mb}mb-${PER_CONVERSATION}pc`);
  const done = path.join(dir, 'bench-done');
  const target = mb * 1_000_000;
  let bytes = 0;
  let n = 0;
  while (bytes < target) {
    const i = n++;
    bytes += i % 4 === 3 ? 8_000 + ((i * 7919) % 15_000) : 200 + ((i * 131) % 1500);
  }
  if (existsSync(done)) {
    await moveCold(dir);
    return { dir, messages: n };
  }
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const started = Date.now();
  const conversations = Math.ceil(n / PER_CONVERSATION);
  const coldEnd = Math.max(0, n - HOT_TAIL);
  let store = await openStore(dir, { segmentBytes: 64 << 20 });
  await store.db.write((tx) => {
    for (let c = 0; c < conversations; c++) {
      tx.run('INSERT INTO conversations (id, title, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [
        `c${c}`,
        `conversation ${c}`,
        'ws',
        new Date(T0 + c * PER_CONVERSATION * 60_000).toISOString(),
        new Date(T0 + c * PER_CONVERSATION * 60_000).toISOString(),
      ]);
    }
  });
  await store.close();
  // Cold part: bodies (keys = seq) and cold rows, straight into history.db.
  const perConversation = new Map<string, { bytes: number; last: string; preview: string | null; count: number }>();
  const usage: NewUsage[] = [];
  const sqlite = spawn('sqlite3', [path.join(dir, 'history.db')], { stdio: ['pipe', 'inherit', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => sqlite.on('exit', resolve));
  const send = async (text: string) => {
    if (!sqlite.stdin.write(text)) await once(sqlite.stdin, 'drain');
  };
  await send('PRAGMA synchronous = OFF; PRAGMA cache_size = -256000; BEGIN;\n');
  for (let i = 0; i < coldEnd; i++) {
    const m = messageAt(i);
    const data = m.data === undefined ? null : JSON.stringify(m.data);
    const size = byteSize(m.content, data);
    const seq = i + 1;
    await send(
      `INSERT INTO bodies (key, conversation_id, role, content, data) VALUES (${seq}, ${q(m.conversation_id)}, ${q(m.role)}, ${q(m.content)}, ${q(data)});` +
        `INSERT INTO cold_messages (seq, id, conversation_id, role, timestamp, tool_name, body_key, bytes) VALUES (${seq}, ${q(m.id)}, ${q(m.conversation_id)}, ${q(m.role)}, ${q(m.timestamp)}, ${q(m.tool_name ?? null)}, ${seq}, ${size});\n`,
    );
    if (i % 20_000 === 19_999) await send('COMMIT; BEGIN;\n');
    // Past SEARCHABLE messages the search index is left out (its upkeep was most of the time: a 10 GB
    // history took over an hour on the loaded machine); the open and reads do not touch it.
    if (i === SEARCHABLE - 1) await send('COMMIT; DROP TRIGGER bodies_ai; BEGIN;\n');
    const c = perConversation.get(m.conversation_id) ?? { bytes: 0, last: m.timestamp, preview: null, count: 0 };
    c.bytes += size;
    c.last = m.timestamp;
    c.count += 1;
    if (m.role !== 'tool') c.preview = previewOf(m.content);
    perConversation.set(m.conversation_id, c);
    if (m.role === 'assistant') usage.push(usageAt(m));
  }
  await send(`COMMIT; ${coldEnd >= SEARCHABLE ? BODIES_AI : ''} PRAGMA wal_checkpoint(TRUNCATE);\n`);
  sqlite.stdin.end();
  if ((await exited) !== 0) throw new Error('sqlite3 failed');
  console.log(`  wrote ${coldEnd} cold messages with the sqlite3 command line in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // The rest through the store: the conversations' cold columns, usage rows, then the hot tail.
  store = await openStore(dir, { segmentBytes: 64 << 20 });
  await store.db.write((tx) => {
    for (const [id, c] of perConversation) {
      tx.run('UPDATE conversations SET cold_seq = ?, cold_count = ?, bytes = ?, updated_at = ?, last_message = ?, hot = 0 WHERE id = ?', [
        Number(id.slice(1)) * PER_CONVERSATION + c.count, // its last cold seq (seq = index + 1)
        c.count,
        c.bytes,
        c.last,
        c.preview,
        id,
      ]);
    }
    tx.run("DELETE FROM sqlite_sequence WHERE name = 'messages'");
    tx.run("INSERT INTO sqlite_sequence (name, seq) VALUES ('messages', ?)", [coldEnd]);
    // No sweep of the keys written above (all referenced by cold rows): as after the maintenance's.
    tx.run("INSERT OR REPLACE INTO meta (key, value) VALUES ('history.swept_key', ?)", [String(coldEnd)]);
  });
  for (let i = coldEnd; i < n; i += 2000) {
    const part = Array.from({ length: Math.min(2000, n - i) }, (_, k) => messageAt(i + k));
    await store.messages.appendMany(part);
    usage.push(...part.filter((m) => m.role === 'assistant').map(usageAt));
  }
  for (let i = 0; i < usage.length; i += 20_000) {
    const part = usage.slice(i, i + 20_000);
    await store.db.write((tx) => {
      for (const u of part) {
        tx.run(
          'INSERT INTO usage (message_id, conversation_id, source, day, updated_at, provider, model, input, output, cached, cost_micro, estimated, calls, context_used, context_window) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          [u.message_id, u.conversation_id, u.source, u.day, u.updated_at, u.provider, u.model, u.input, u.output, u.cached, u.cost_micro, 0, u.calls, u.context_used, u.context_window],
        );
      }
    });
  }
  await store.db.compact();
  await store.close();
  await writeFile(done, String(n));
  console.log(`  generated ${mb} MB (${n} messages) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await moveCold(dir);
  return { dir, messages: n };
}

/**
 * One maintenance pass over the generated history (what a store that ran for a while has done),
 * once per cached history: moves what it moves (usage rows...), so the open measured is a settled one.
 */
async function moveCold(dir: string): Promise<void> {
  const done = path.join(dir, 'bench-cold');
  if (existsSync(done)) return;
  const started = Date.now();
  const store = await openStore(dir);
  await store.maintenance.run();
  await store.db.compact();
  await store.close();
  await writeFile(done, '');
  console.log(`  maintenance pass over the generated history in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

export interface OpenFigures {
  openMs: number;
  /** Resident bytes the open added, and of them the JS heap's. */
  rssDelta: number;
  rss: number;
  heapDelta: number;
  /** sql.js' database (all in WebAssembly memory): page_count * page_size. */
  sqlJs: number;
}

/**
 * Opens the store in a fresh child process: ms to open and resident bytes the open added. `root`: the
 * checkout whose code opens it (bench/history-open-ab.ts compares two).
 */
export function openInChild(dir: string, root = path.join(__dirname, '..')): OpenFigures {
  const script = `
    const { openStore } = require(${JSON.stringify(path.join(root, 'src', 'store', 'index.ts'))});
    (async () => {
      const before = process.memoryUsage();
      const t = performance.now();
      const store = await openStore(${JSON.stringify(dir)});
      const openMs = performance.now() - t;
      store.conversations.list({ limit: 20 });
      const after = process.memoryUsage();
      const page = (p) => Number(Object.values(store.db.get('PRAGMA ' + p))[0]);
      const sqlJs = page('page_count') * page('page_size');
      await store.close();
      console.log(JSON.stringify({ openMs, rssDelta: after.rss - before.rss, rss: after.rss, heapDelta: after.heapUsed - before.heapUsed, sqlJs }));
    })();`;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8', cwd: root });
  const line = result.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as OpenFigures;
  } catch {
    throw new Error(`open child failed: ${result.stderr}`);
  }
}

/**
 * In a fresh child, on history.db alone: the check made at every open (store/history/integrity.ts) and,
 * for comparison, SQLite's `PRAGMA quick_check` (reads every page). Page cache warm (just generated).
 */
function checksInChild(dir: string): { checkMs: number; quickCheckMs: number; fileMb: number } {
  const script = `
    const { Database } = require('node-sqlite3-wasm');
    const { statSync } = require('node:fs');
    const { cutBeforeOpen, damageAtOpen } = require(${JSON.stringify(path.join(__dirname, '..', 'src', 'store', 'history', 'integrity.ts'))});
    const file = ${JSON.stringify(path.join(dir, 'history.db'))};
    let t = performance.now();
    const cut = cutBeforeOpen(file);
    let checkMs = performance.now() - t;
    const db = new Database(file);
    // As history-db.ts opens it (the schema is read here), so what is timed next is the check alone.
    db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA cache_size = -16000;');
    t = performance.now();
    const damage = cut === null ? damageAtOpen(db) : cut.why;
    checkMs += performance.now() - t;
    t = performance.now();
    const quick = db.all('PRAGMA quick_check');
    const quickCheckMs = performance.now() - t;
    db.close();
    if (damage !== null || quick[0].quick_check !== 'ok') throw new Error('damaged: ' + damage + ' ' + JSON.stringify(quick));
    console.log(JSON.stringify({ checkMs, quickCheckMs, fileMb: statSync(file).size / 1e6 }));`;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8', cwd: path.join(__dirname, '..') });
  const line = result.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as { checkMs: number; quickCheckMs: number; fileMb: number };
  } catch {
    throw new Error(`check child failed: ${result.stderr}`);
  }
}

interface Row {
  mb: number;
  messages: number;
  openMs: number;
  rssDeltaMb: number;
  heapDeltaMb: number;
  sqlJsMb: number;
  getP50Ms: number;
  listP50Ms: number;
  searchP99Ms: number;
  maxStallMs: number;
  historyDbMb: number;
  checkMs: number;
  quickCheckMs: number;
}

/**
 * With `full` false (histories above HISTORY_BENCH_FULL_MB): no quick_check (reads every page) and no
 * writes or retention pass (cutting every old tool output of 10 GB rewrites most of the file).
 */
async function measure(dir: string, mb: number, messages: number, full: boolean): Promise<Row> {
  const opens = [0, 1, 2].map(() => openInChild(dir));
  // Each figure its own median of the three opens (the memory of the open with the median time was one sample).
  const median = (f: (o: OpenFigures) => number) => opens.map(f).sort((a, b) => a - b)[1];
  const open: OpenFigures = {
    openMs: median((o) => o.openMs),
    rssDelta: median((o) => o.rssDelta),
    rss: median((o) => o.rss),
    heapDelta: median((o) => o.heapDelta),
    sqlJs: median((o) => o.sqlJs),
  };
  const checks = full ? checksInChild(dir) : { checkMs: NaN, quickCheckMs: NaN, fileMb: statSync(path.join(dir, 'history.db')).size / 1e6 };
  const store = await openStore(dir);
  try {
    const conversations = Math.ceil(messages / PER_CONVERSATION);
    const gets: number[] = [];
    const lists: number[] = [];
    for (let i = 0; i < 200; i++) {
      const c = `c${(i * 7919) % conversations}`;
      let t = performance.now();
      await store.messages.recent(c, { limit: 50 });
      gets.push(performance.now() - t);
      t = performance.now();
      store.conversations.list({ limit: 50 });
      lists.push(performance.now() - t);
    }
    const searches: number[] = [];
    for (let i = 0; i < 200; i++) {
      const query = `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length].slice(0, 3)}`;
      const t = performance.now();
      await store.messages.search(query, { limit: 20 });
      searches.push(performance.now() - t);
    }
    // Writes (a turn with a tool output) and a retention pass cutting old tool outputs, loop watched.
    const loop = monitorEventLoopDelay({ resolution: 1 });
    if (full) {
      loop.enable();
      await store.conversations.create({ id: 'bench', title: 'bench', source: 'ws', created_at: new Date().toISOString() });
      for (let i = 0; i < 100; i++) {
        const m = messageAt(3 + 4 * i);
        await store.messages.appendMany([
          { ...messageAt(4 * i), id: `w${i}u`, conversation_id: 'bench', timestamp: new Date().toISOString() },
          { ...m, id: `w${i}t`, conversation_id: 'bench', timestamp: new Date().toISOString() },
        ]);
      }
      store.maintenance.setPolicy({ toolOutputDays: 1 });
      await store.maintenance.run();
      loop.disable();
    }
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    return {
      mb,
      messages,
      openMs: open.openMs,
      rssDeltaMb: open.rssDelta / 1e6,
      heapDeltaMb: open.heapDelta / 1e6,
      sqlJsMb: open.sqlJs / 1e6,
      getP50Ms: percentile(sorted(gets), 50),
      listP50Ms: percentile(sorted(lists), 50),
      searchP99Ms: percentile(sorted(searches), 99),
      maxStallMs: full ? loop.max / 1e6 : NaN,
      historyDbMb: checks.fileMb,
      checkMs: checks.checkMs,
      quickCheckMs: checks.quickCheckMs,
    };
  } finally {
    await store.close();
  }
}

/** Issue 25's row: resident memory the open added at the largest size, as a ratio to the first (10 MB), and from 2 GB up. */
export function memoryRow(rows: Pick<Row, 'mb' | 'rssDeltaMb'>[]): string {
  const base = rows[0];
  const largest = rows.reduce((a, b) => (b.mb > a.mb ? b : a));
  const from2Gb = rows.filter((r) => r.mb >= 2000);
  const flat = from2Gb.length >= 2 ? `; from 2 GB up ${from2Gb.map((r) => `${r.mb} MB ${fmt(r.rssDeltaMb, 0)} MB`).join(', ')}: ${fmt(largest.rssDeltaMb / from2Gb[0].rssDeltaMb)}x` : '';
  return (
    `memory added by opening a ${largest.mb} MB history: ${fmt(largest.rssDeltaMb, 0)} MB (goal < 150 MB), ` +
    `${fmt(largest.rssDeltaMb / base.rssDeltaMb)}x the ${base.mb} MB history's ${fmt(base.rssDeltaMb, 0)} MB in the same run${flat}`
  );
}

export async function benchHistory(): Promise<Row[]> {
  const sizes = (process.env.HISTORY_BENCH_MB ?? `10,200,2000${existsSync(path.join(CACHE, '10000mb', 'bench-done')) ? ',10000' : ''}`)
    .split(',')
    .map(Number)
    .filter((n) => n > 0)
    // Smallest first: the ratios are against the first row (and the first from 2 GB up).
    .sort((a, b) => a - b);
  if (process.env.HISTORY_BENCH_FRESH === '1') await rm(CACHE, { recursive: true, force: true });
  const rows: Row[] = [];
  for (const mb of sizes) {
    const { dir, messages } = await generate(mb);
    if (mb > FULL_MAX_MB) {
      // Opens and reads only: on the cached copy itself (an open keeps it a valid store), not on a copy of 10 GB.
      rows.push(await measure(dir, mb, messages, false));
      continue;
    }
    // The generated copy stays as generated: measurements run on a copy only where they write.
    const work = path.join(CACHE, `${mb}mb-work`);
    await rm(work, { recursive: true, force: true });
    spawnSync('cp', ['-r', dir, work]);
    rows.push(await measure(work, mb, messages, true));
    await rm(work, { recursive: true, force: true });
  }
  const base = rows[0];
  const ratio = (a: number, b: number) => fmt(a / b);
  console.log(
    '| history | messages | open ms (ratio) | RSS added by open MB (ratio) | of it JS heap MB | sql.js database MB | get_messages p50 ms (ratio) | list p50 ms (ratio) | search p99 ms (ratio) | max loop stall ms |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.mb} MB | ${r.messages} | ${fmt(r.openMs, 0)} (${ratio(r.openMs, base.openMs)}) | ${fmt(r.rssDeltaMb, 0)} (${ratio(r.rssDeltaMb, base.rssDeltaMb)}) | ${fmt(r.heapDeltaMb, 0)} | ${fmt(r.sqlJsMb, 1)} | ${fmt(r.getP50Ms)} (${ratio(r.getP50Ms, base.getP50Ms)}) | ${fmt(r.listP50Ms)} (${ratio(r.listP50Ms, base.listP50Ms)}) | ${fmt(r.searchP99Ms)} (${ratio(r.searchP99Ms, base.searchP99Ms)}) | ${fmt(r.maxStallMs, 1)} |`,
    );
  }
  console.log('');
  console.log('| history | history.db MB | check at open ms (ratio) | PRAGMA quick_check ms (ratio) |');
  console.log('|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.mb} MB | ${fmt(r.historyDbMb, 0)} | ${fmt(r.checkMs)} (${ratio(r.checkMs, base.checkMs)}) | ${fmt(r.quickCheckMs, 0)} (${ratio(r.quickCheckMs, base.quickCheckMs)}) |`);
  }
  console.log('');
  console.log(memoryRow(rows));
  return rows;
}
