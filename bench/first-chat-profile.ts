// What a chat sent 1 s after start pays that the second does not (issue 25): `serve` runs under
// `node --cpu-prof`; the samples taken during each chat (process.hrtime's clock, the same in both
// processes) are summed by function, and the functions the first chat spent most on beyond the second's
// are printed. `npx tsx bench/first-chat-profile.ts` (after `npm run build`). RUNS=N sums N starts'
// samples (one run's are a few hundred, too few to tell a function's 1 ms from noise) and prints each
// chat's mean; BENCH_CLI=path profiles another build; the bundle's functions are named by their source
// file (its source map) so the list reads as our modules, not bundle lines.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeOpenAI } from '../test/helpers/fake-openai';
import { TestClient } from '../test/helpers/ws-client';
import { watchServe } from './serve-output';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const TOKEN = 'bench-access-token-0123456789abcdef0123';
const CLI = process.env.BENCH_CLI ?? join(__dirname, '..', 'dist', 'cli.js');
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
const CHATS = 3;
const BY = process.env.BY ?? 'leaf';
const STACK_DEPTH = Number(process.env.STACK_DEPTH ?? 4);

/** One start under --cpu-prof: the profile and each chat's window (µs, hrtime's clock). */
async function profiledStart(fakeUrl: string): Promise<{ profile: CpuProfile; windows: [number, number][] }> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-first-chat-'));
  const profDir = await mkdtemp(join(tmpdir(), 'ra-first-chat-prof-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, provider: 'openai', model: 'fake-model', base_url: fakeUrl, api_key: 'sk-bench' }));
  const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-interval', '200', '--cpu-prof-dir', profDir, CLI, 'serve', '--data-dir', dir, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const served = watchServe(child);
  const port = await served.port;
  // 1 s after listening; unless AFTER=1s, the warm-up over too (then what it leaves to the first chat is the question).
  await new Promise((r) => setTimeout(r, 1000));
  if (process.env.AFTER !== '1s') {
    while (!served.output().includes('service.warmed_up')) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, Number(process.env.SETTLE_MS ?? 200)));
  }
  const client = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, TOKEN);
  const windows: [number, number][] = [];
  for (let i = 0; i < CHATS; i += 1) {
    const began = nowUs();
    const reply = await client.request({ type: 'chat', message: 'hello', stream: true }, 30_000);
    windows.push([began, nowUs()]);
    if (reply.status !== 'ok') throw new Error(JSON.stringify(reply));
  }
  client.close();
  await new Promise<void>((done) => {
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
  // One profile a thread (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile): the main thread's is thread 0.
  const file = (await readdir(profDir)).find((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f))!;
  const profile = JSON.parse(await readFile(join(profDir, file), 'utf8')) as CpuProfile;
  await rm(dir, { recursive: true, force: true });
  await rm(profDir, { recursive: true, force: true });
  return { profile, windows };
}

/** Names a bundle's line by its source (`file:line`, the map's), anything else by its file's name. */
function namer(): (url: string, line: number) => string {
  const maps = new Map<string, SourceMap | null>();
  return (url, line) => {
    const file = url.replace(/^file:\/\//, '');
    if (!maps.has(file)) {
      let map: SourceMap | null = null;
      try {
        if (file.endsWith('.js')) map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')) as never);
      } catch {
        map = null;
      }
      maps.set(file, map);
    }
    const entry = maps.get(file)?.findEntry(line, 0) as { originalSource?: string; originalLine?: number } | undefined;
    if (entry?.originalSource) return `${entry.originalSource.replace(/^.*?(src\/|node_modules\/)/, '$1')}:${(entry.originalLine ?? 0) + 1}`;
    return `${file.replace(/.*\//, '')}:${line + 1}`;
  };
}

async function main(): Promise<void> {
  const fake = await startFakeOpenAI();
  fake.setDefault(() => ({ text: 'A short reply, streamed.', chunks: 5 }));
  const runs = Number(process.env.RUNS ?? 1);
  const name = namer();
  const sums = Array.from({ length: CHATS }, () => new Map<string, number>());
  const totals = Array.from({ length: CHATS }, () => 0);
  const walls = Array.from({ length: CHATS }, () => 0);
  for (let run = 0; run < runs; run += 1) {
    // KEEP=dir keeps each run's profile and windows there; FROM=dir reads them back instead of starting (another BY).
    const kept = process.env.FROM ? join(process.env.FROM, `run-${run}.json`) : undefined;
    const { profile, windows } = kept ? (JSON.parse(await readFile(kept, 'utf8')) as Awaited<ReturnType<typeof profiledStart>>) : await profiledStart(fake.url);
    if (process.env.KEEP) await writeFile(join(process.env.KEEP, `run-${run}.json`), JSON.stringify({ profile, windows }));
    windows.forEach(([a, b], w) => (walls[w] += (b - a) / 1000 / runs));
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parentOf = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
    const frameName = (id: number) => {
      const f = byId.get(id)!.callFrame;
      return `${f.functionName || '(anon)'} ${f.url ? name(f.url, f.lineNumber) : ':0'}`;
    };
    // BY=ours: each sample counted to the innermost of our functions (src/) on its stack (what of ours
    // got dearer, callees included); BY=stack: to its leaf and STACK_DEPTH callers; else to its leaf.
    const keyOf = (id: number): string => {
      if (BY === 'ours') {
        for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
          const k = frameName(at);
          if (/ src\//.test(k)) return k;
        }
        return '(none of ours)';
      }
      if (BY === 'stack') {
        const chain: string[] = [];
        for (let at: number | undefined = id; at !== undefined && chain.length <= STACK_DEPTH; at = parentOf.get(at)) chain.push(frameName(at));
        return chain.join(' < ');
      }
      return frameName(id);
    };
    let t = profile.startTime;
    profile.samples.forEach((id, i) => {
      t += profile.timeDeltas[i];
      const w = windows.findIndex(([a, b]) => t >= a && t <= b);
      if (w < 0) return;
      const f = byId.get(id)!.callFrame;
      if (f.functionName === '(idle)') return;
      const key = keyOf(id);
      const dt = (profile.timeDeltas[i + 1] ?? 100) / 1000 / runs;
      sums[w].set(key, (sums[w].get(key) ?? 0) + dt);
      totals[w] += dt;
    });
  }
  await fake.close();
  console.log(`mean of ${runs}: sampled ms (non-idle) per chat: ${totals.map((x) => x.toFixed(1)).join(' / ')}; wall ${walls.map((x) => x.toFixed(1)).join(' / ')}`);
  const diff = [...sums[0]].map(([k, v]) => [k, v - (sums[1].get(k) ?? 0)] as const).sort((a, b) => b[1] - a[1]);
  const byFile = (m: Map<string, number>) => {
    const r = new Map<string, number>();
    for (const [k, v] of m) {
      const f = k.startsWith('wasm-function') ? 'wasm' : k.replace(/^.* /, '').replace(/:\d+$/, '') || '(native)';
      r.set(f, (r.get(f) ?? 0) + v);
    }
    return r;
  };
  const [f0, f1] = [byFile(sums[0]), byFile(sums[1])];
  console.log(
    'by file, first vs second: ' +
      [...f0]
        .sort((a, b) => b[1] - a[1])
        .slice(0, Number(process.env.FILES ?? 12))
        .map(([f, v]) => `${f} ${v.toFixed(1)}/${(f1.get(f) ?? 0).toFixed(1)}`)
        .join(', '),
  );
  for (const [k, v] of diff.slice(0, Number(process.env.TOP ?? 40))) console.log(`${v.toFixed(2).padStart(7)} ms  ${k}`);
}

void main();
