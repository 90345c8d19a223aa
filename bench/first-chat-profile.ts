// What a chat sent 1 s after start pays that the second does not (issue 25): `serve` runs under
// `node --cpu-prof`; the samples taken during each chat (process.hrtime's clock, the same in both
// processes) are summed by function, and the functions the first chat spent most on beyond the second's
// are printed. `npx tsx bench/first-chat-profile.ts` (after `npm run build`).
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeOpenAI } from '../test/helpers/fake-openai';
import { TestClient } from '../test/helpers/ws-client';

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
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

async function main(): Promise<void> {
  const fake = await startFakeOpenAI();
  fake.setDefault(() => ({ text: 'A short reply, streamed.', chunks: 5 }));
  const dir = await mkdtemp(join(tmpdir(), 'ra-first-chat-'));
  const profDir = await mkdtemp(join(tmpdir(), 'ra-first-chat-prof-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, provider: 'openai', model: 'fake-model', base_url: fake.url, api_key: 'sk-bench' }));
  const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-interval', '200', '--cpu-prof-dir', profDir, join(__dirname, '..', 'dist', 'cli.js'), 'serve', '--data-dir', dir, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const port = await new Promise<number>((resolve) => {
    const look = () => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
      else setTimeout(look, 5);
    };
    look();
  });
  // 1 s after listening, and the warm-up over (what it leaves to the first chat is the question).
  await new Promise((r) => setTimeout(r, 1000));
  while (!out.includes('service.warmed_up')) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, Number(process.env.SETTLE_MS ?? 200)));
  const client = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, TOKEN);
  const windows: [number, number][] = [];
  for (let i = 0; i < 3; i += 1) {
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
  await fake.close();
  const file = (await readdir(profDir)).find((f) => f.endsWith('.cpuprofile'))!;
  const profile = JSON.parse(await readFile(join(profDir, file), 'utf8')) as CpuProfile;
  await rm(dir, { recursive: true, force: true });
  await rm(profDir, { recursive: true, force: true });
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const sums = windows.map(() => new Map<string, number>());
  const totals = windows.map(() => 0);
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i];
    const w = windows.findIndex(([a, b]) => t >= a && t <= b);
    if (w < 0) return;
    const node = byId.get(id)!;
    const f = node.callFrame;
    if (f.functionName === '(idle)') return;
    const key = `${f.functionName || '(anon)'} ${f.url.replace(/.*\//, '')}:${f.lineNumber + 1}`;
    const dt = (profile.timeDeltas[i + 1] ?? 100) / 1000;
    sums[w].set(key, (sums[w].get(key) ?? 0) + dt);
    totals[w] += dt;
  });
  console.log(`sampled ms (non-idle) per chat: ${totals.map((x) => x.toFixed(1)).join(' / ')}; wall ${windows.map(([a, b]) => ((b - a) / 1000).toFixed(1)).join(' / ')}`);
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
        .slice(0, 12)
        .map(([f, v]) => `${f} ${v.toFixed(1)}/${(f1.get(f) ?? 0).toFixed(1)}`)
        .join(', '),
  );
  for (const [k, v] of diff.slice(0, Number(process.env.TOP ?? 40))) console.log(`${v.toFixed(2).padStart(7)} ms  ${k}`);
}

void main();
