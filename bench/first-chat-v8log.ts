// What V8 does for the first time in the chat sent after start, chat by chat (issue 25): `serve` runs under
// `node --log-function-events` (LOG=functions, the default: each function's compile and first run) or
// `--log-ic` (LOG=ic: each inline cache's miss and state change), and the log's events are counted in
// each chat's window. A V8 log flag changes the flags V8's code cache is checked against, so under it a
// start refuses dist's cache and compiles the whole bundle from source (s16 read its first chat so); here
// the build is copied to a temporary directory and its cache written again under the same flags (the same
// log file's path too: a flag's value counts), so the start reads it as an ordinary start does.
// `npx tsx bench/first-chat-v8log.ts` after `npm run build`; BENCH_CLI=path for another build, RUNS=N
// starts (counts summed), GAP_MS between the client's auth and each chat (default 300: what a command
// leaves behind ends outside the next chat's window), TOP=N functions listed (LOG=ic: by inline cache
// events beyond the later chats').
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { SourceMap } from 'node:module';
import { dirname, join } from 'node:path';
import { startFakeOpenAI } from '../test/helpers/fake-openai';
import { TestClient } from '../test/helpers/ws-client';
import { watchServe } from './serve-output';

const TOKEN = 'bench-access-token-0123456789abcdef0123';
const CLI = process.env.BENCH_CLI ?? join(__dirname, '..', 'dist', 'cli.js');
const LOG = process.env.LOG === 'ic' ? 'ic' : 'functions';
const GAP_MS = Number(process.env.GAP_MS ?? 300);
/** LOG=functions: the event whose functions are listed (KIND=first-execution: those run for the first time in the chat). */
const KIND = process.env.KIND ?? 'interpreter';
const CHATS = 3;
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

interface LogEvent {
  us: number;
  /** functions: the event (`interpreter`, `baseline`, `first-execution`...); ic: the state change, `0>1`. */
  kind: string;
  /** functions: the function's name; ic: the code object's name (function and source position). */
  where: string;
  ms: number;
}

/** The build copied, its code cache written under `flags` (cli-loader.ts's writeCodeCache, as the build does). */
function flaggedBuild(flags: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'ra-v8log-build-'));
  cpSync(dirname(CLI), dir, { recursive: true });
  execFileSync(process.execPath, [...flags, '-e', 'require("./cli.js").writeCodeCache().then((p) => process.exit(p === undefined ? 0 : 1))'], { cwd: dir, stdio: 'inherit' });
  return dir;
}

/** One start: the log's events and, on the log's clock, each chat's window (the auth's first event sets the clocks' offset). */
async function loggedStart(build: string, flags: string[], logFile: string, fakeUrl: string): Promise<{ events: LogEvent[]; windows: [number, number][] }> {
  const dir = mkdtempSync(join(tmpdir(), 'ra-v8log-'));
  writeFileSync(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, provider: 'openai', model: 'fake-model', base_url: fakeUrl, api_key: 'sk-bench' }));
  const spawned = nowUs();
  const child = spawn(process.execPath, [...flags, join(build, 'cli.js'), 'serve', '--data-dir', dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const served = watchServe(child);
  try {
    const port = await served.port;
    await new Promise((r) => setTimeout(r, 1000));
    while (!served.output().includes('service.warmed_up')) await new Promise((r) => setTimeout(r, 10));
    const client = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, TOKEN);
    const chats: [number, number][] = [];
    for (let i = 0; i < CHATS; i += 1) {
      await new Promise((r) => setTimeout(r, GAP_MS));
      const began = nowUs();
      const reply = await client.request({ type: 'chat', message: 'hello', stream: true }, 30_000);
      if (reply.status !== 'ok') throw new Error(JSON.stringify(reply));
      chats.push([began, nowUs()]);
    }
    // And before the stop, whose own events would otherwise follow the last chat's at once.
    await new Promise((r) => setTimeout(r, GAP_MS));
    client.close();
    await new Promise<void>((done) => {
      child.once('exit', () => done());
      child.kill('SIGTERM');
    });
    // Sorted: each isolate (the main thread's, history.db's worker's) writes its own lines as they come.
    const events = parse(readFileSync(logFile, 'utf8')).sort((a, b) => a.us - b.us);
    // The log's clock starts as V8 does, some milliseconds after the spawn: that lag is taken as the one (0-150
    // ms) that puts the most events inside the chats' windows (the chats are the busy moments between pauses).
    const spans = chats.map(([a, b]) => [a - spawned, b - spawned] as const);
    let lag = 0;
    let most = -1;
    for (let ms = 0; ms <= 150; ms += 1) {
      const inside = events.filter((e) => spans.some(([a, b]) => e.us >= a - ms * 1000 && e.us <= b - ms * 1000)).length;
      if (inside > most) [most, lag] = [inside, ms];
    }
    return { events, windows: spans.map(([a, b]) => [a - lag * 1000 - 2000, b - lag * 1000 + 2000]) };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

function parse(text: string): LogEvent[] {
  const events: LogEvent[] = [];
  const codes: { start: number; size: number; name: string }[] = [];
  for (const line of text.split('\n')) {
    const p = line.split(',');
    if (LOG === 'functions' && p[0] === 'function' && p.length >= 7) events.push({ us: Number(p[6]), kind: p[1], where: p.slice(7).join(',') || '(anonymous)', ms: Number(p[5]) });
    if (LOG === 'ic' && p[0] === 'code-creation') codes.push({ start: Number.parseInt(p[4], 16), size: Number(p[5]), name: p.slice(6).join(',') });
    if (LOG === 'ic' && p[0].endsWith('IC') && p.length >= 7) events.push({ us: Number(p[2]), kind: `${p[5]}>${p[6]}`, where: p[1], ms: 0 });
  }
  if (LOG === 'ic') {
    codes.sort((a, b) => a.start - b.start);
    for (const e of events) {
      const pc = Number.parseInt(e.where, 16);
      let lo = 0;
      let hi = codes.length - 1;
      let found = '?';
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if (codes[mid].start <= pc) {
          if (pc < codes[mid].start + codes[mid].size) found = codes[mid].name.replace(/,0x[0-9a-f]+,.*$/, '');
          lo = mid + 1;
        } else hi = mid - 1;
      }
      e.where = sourceOf(found);
    }
  }
  return events;
}

const maps = new Map<string, SourceMap | undefined>();

/** A function of the build (`name /tmp/.../cli-main.js:line:column`) named by its source file and line (the build's source map). */
function sourceOf(where: string): string {
  const m = /^(.*?)\s*(\S+\.js):(\d+):(\d+)$/.exec(where);
  if (!m || !m[2].startsWith('/')) return where;
  if (!maps.has(m[2])) {
    try {
      maps.set(m[2], new SourceMap(JSON.parse(readFileSync(`${m[2]}.map`, 'utf8')) as never));
    } catch {
      maps.set(m[2], undefined);
    }
  }
  const entry = maps.get(m[2])?.findEntry(Number(m[3]) - 1, Number(m[4]) - 1) as { originalSource?: string; originalLine?: number } | undefined;
  return entry?.originalSource ? `${m[1]} ${entry.originalSource.replace(/^.*?(src\/|node_modules\/)/, '$1')}:${(entry.originalLine ?? 0) + 1}` : where;
}

async function main(): Promise<void> {
  const logFile = join(tmpdir(), `ra-v8log-${process.pid}.log`);
  const flags = [LOG === 'ic' ? '--log-ic' : '--log-function-events', `--logfile=${logFile}`, '--no-logfile-per-isolate'];
  const build = flaggedBuild(flags);
  const fake = await startFakeOpenAI();
  fake.setDefault(() => ({ text: 'A short reply, streamed.', chunks: 5 }));
  const runs = Number(process.env.RUNS ?? 1);
  const counts = Array.from({ length: CHATS }, () => new Map<string, number>());
  const byWhere = Array.from({ length: CHATS }, () => new Map<string, number>());
  const add = (map: Map<string, number>, key: string, n = 1) => map.set(key, (map.get(key) ?? 0) + n);
  try {
    for (let run = 0; run < runs; run += 1) {
      const { events, windows } = await loggedStart(build, flags, logFile, fake.url);
      windows.forEach(([from, to], chat) => {
        for (const e of events.filter((x) => x.us >= from && x.us <= to)) {
          add(counts[chat], e.kind);
          if (LOG === 'functions' && (e.kind === 'interpreter' || e.kind === 'baseline')) add(counts[chat], `${e.kind} ms`, e.ms);
          if (LOG === 'functions' ? e.kind === KIND : !e.kind.startsWith('X')) add(byWhere[chat], e.where);
          if (LOG === 'ic') add(counts[chat], 'all');
        }
      });
    }
  } finally {
    await fake.close();
    rmSync(build, { recursive: true, force: true });
    rmSync(logFile, { force: true });
  }
  console.log(`${LOG}, ${runs} start(s), ${GAP_MS} ms before each chat; per chat, summed over the starts:`);
  counts.forEach((map, chat) => console.log(`  chat ${chat + 1}: ${[...map].map(([k, v]) => `${k} ${Number.isInteger(v) ? v : v.toFixed(2)}`).join(', ')}`));
  const top = Number(process.env.TOP ?? 25);
  const what = LOG === 'functions' ? (KIND === 'interpreter' ? 'compiled from source (interpreter)' : `${KIND} events`) : 'inline cache events with feedback, beyond the later chats';
  console.log(`the first chat's ${what}:`);
  const rows = [...byWhere[0]].map(([where, n]) => [where, n - Math.max(0, ...byWhere.slice(1).map((m) => m.get(where) ?? 0))] as const);
  for (const [where, n] of rows
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    console.log(`  ${String(n).padStart(4)}  ${where}`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
