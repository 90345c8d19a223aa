// `npm run bench -- history`: a history of 10 MB, 200 MB and more (HISTORY_BENCH_MB, e.g. "10,200,2000"),
// messages of 0.2-1.7 KB with every fourth an 8-23 KB tool output (issue 13's table). Measures the open
// (in a child process that only opens: time and resident memory added), get_messages p50, search p99,
// the longest event-loop stall during writes and a retention pass, and the integrity check made at open
// against SQLite's quick_check; each as a ratio to 10 MB.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { openStore } from '../src/store/index';
import type { NewMessage } from '../src/store/index';
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
const PER_CONVERSATION = 200;
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

function messageAt(i: number): NewMessage {
  const c = Math.floor(i / PER_CONVERSATION);
  const tool = i % 4 === 3;
  const size = tool ? 8_000 + ((i * 7919) % 15_000) : 200 + ((i * 131) % 1500);
  return {
    id: `m${i}`,
    conversation_id: `c${c}`,
    role: tool ? 'tool' : i % 2 === 0 ? 'user' : 'assistant',
    content: words(size, i),
    timestamp: new Date(T0 + i * 60_000).toISOString(),
    ...(tool ? { tool_name: 'read_file', data: { kind: 'result', call_id: `call${i}`, ok: true } } : {}),
  };
}

/** Generates (once; cached in the temp dir between runs and sizes) a history of about `mb` megabytes. */
async function generate(root: string, mb: number): Promise<{ dir: string; messages: number }> {
  const dir = path.join(root, `${mb}mb`);
  const done = path.join(dir, 'bench-done');
  const target = mb * 1_000_000;
  let bytes = 0;
  let n = 0;
  while (bytes < target) bytes += Buffer.byteLength(messageAt(n++).content);
  if (existsSync(done)) {
    await moveCold(dir);
    return { dir, messages: n };
  }
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const started = Date.now();
  const store = await openStore(dir, { segmentBytes: 64 << 20 });
  for (let c = 0; c * PER_CONVERSATION < n; c++) {
    await store.conversations.create({ id: `c${c}`, title: `conversation ${c}`, source: 'ws', created_at: new Date(T0 + c * PER_CONVERSATION * 60_000).toISOString() });
  }
  for (let i = 0; i < n; i += 4000) {
    await store.messages.appendMany(Array.from({ length: Math.min(4000, n - i) }, (_, k) => messageAt(i + k)));
  }
  await store.db.compact();
  await store.close();
  await writeFile(done, String(n));
  console.log(`  generated ${mb} MB (${n} messages) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  await moveCold(dir);
  return { dir, messages: n };
}

/**
 * The metadata of idle conversations moved to history.db (migration 17 and the maintenance), once per
 * cached history: what a store upgraded in place, or one that ran for a while, looks like.
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
  console.log(`  moved the metadata of idle conversations to history.db in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

interface OpenFigures {
  openMs: number;
  /** Resident bytes the open added, and of them the JS heap's. */
  rssDelta: number;
  rss: number;
  heapDelta: number;
  /** sql.js' database (all in WebAssembly memory): page_count * page_size. */
  sqlJs: number;
}

/** Opens the store in a fresh child process: ms to open and resident bytes the open added. */
function openInChild(dir: string): OpenFigures {
  const script = `
    const { openStore } = require(${JSON.stringify(path.join(__dirname, '..', 'src', 'store', 'index.ts'))});
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
  const result = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8', cwd: path.join(__dirname, '..') });
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
    const { damageAtOpen } = require(${JSON.stringify(path.join(__dirname, '..', 'src', 'store', 'history', 'integrity.ts'))});
    const file = ${JSON.stringify(path.join(dir, 'history.db'))};
    const db = new Database(file);
    // As history-db.ts opens it (the schema is read here), so what is timed next is the check alone.
    db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA cache_size = -16000;');
    let t = performance.now();
    const damage = damageAtOpen(db, file);
    const checkMs = performance.now() - t;
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

async function measure(dir: string, mb: number, messages: number): Promise<Row> {
  const opens = [0, 1, 2].map(() => openInChild(dir));
  const open = opens.sort((a, b) => a.openMs - b.openMs)[1];
  const checks = checksInChild(dir);
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
      maxStallMs: loop.max / 1e6,
      historyDbMb: checks.fileMb,
      checkMs: checks.checkMs,
      quickCheckMs: checks.quickCheckMs,
    };
  } finally {
    await store.close();
  }
}

export async function benchHistory(): Promise<Row[]> {
  const sizes = (process.env.HISTORY_BENCH_MB ?? '10,200,2000')
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const root = path.join(tmpdir(), 'ra-history-bench');
  const rows: Row[] = [];
  for (const mb of sizes) {
    const { dir, messages } = await generate(root, mb);
    // The generated copy stays as generated: measurements run on a copy only where they write.
    const work = path.join(root, `${mb}mb-work`);
    await rm(work, { recursive: true, force: true });
    spawnSync('cp', ['-r', dir, work]);
    rows.push(await measure(work, mb, messages));
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
  return rows;
}
