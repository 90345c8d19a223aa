// What a 0-tool agent turn allocates, and where (docs/design.md, "The turn's tail"): `npx tsx
// bench/turn-alloc.ts`. V8's sampling heap profiler (every 1 KiB, objects a scavenge collected included)
// over TURNS turns of one conversation after 300; printed: KiB a turn in all, by the allocating function,
// and by the innermost frame in src/ (who asked for it). HEAP_PROFILE=<file> also writes the profile.
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Service } from '../src/service';
import { instantProvider } from './agent';
function post<T = unknown>(session: Session, method: string, params: object = {}): Promise<T> {
  return new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result as T))));
}
interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'ra-ap-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => instantProvider(0) });
  let c: string | undefined;
  const turn = async () => (c = (await service.agent.chat({ message: 'bench turn', conversationId: c, source: { kind: 'lan' } })).conversation_id);
  for (let i = 0; i < 300; i++) await turn();
  const session = new Session();
  session.connect();
  await post(session, 'HeapProfiler.enable');
  await post(session, 'HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  const N = Number(process.env.TURNS ?? 1000);
  for (let i = 0; i < N; i++) await turn();
  const { profile } = await post<{ profile: { head: Node } }>(session, 'HeapProfiler.stopSampling');
  session.disconnect();
  if (process.env.HEAP_PROFILE) writeFileSync(process.env.HEAP_PROFILE, JSON.stringify(profile));
  // aggregate self size by function+url, and by top src frame
  const self = new Map<string, number>();
  const bySrc = new Map<string, number>();
  let total = 0;
  const walk = (node: Node, stack: string[]) => {
    const f = node.callFrame;
    const name = `${f.functionName || '(anon)'} ${f.url.replace(/^.*\/(src|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
    const s = [...stack, name];
    if (node.selfSize > 0) {
      total += node.selfSize;
      self.set(name, (self.get(name) ?? 0) + node.selfSize);
      const src = [...s].reverse().find((x) => / src\//.test(x)) ?? '(no src frame)';
      bySrc.set(src, (bySrc.get(src) ?? 0) + node.selfSize);
    }
    for (const ch of node.children) walk(ch, s);
  };
  walk(profile.head, []);
  console.log('total sampled KiB per turn', (total / N / 1024).toFixed(1));
  const top = (m: Map<string, number>, k: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([n, v]) => `${(v / N / 1024).toFixed(2).padStart(7)} KiB  ${n}`)
      .join('\n');
  console.log('--- self');
  console.log(top(self, 25));
  console.log('--- innermost src frame');
  console.log(top(bySrc, 40));
  await service.stop();
  await rm(dir, { recursive: true, force: true });
}
void main();
