// Where a 0-tool agent turn's time goes (issue 25): many turns of one conversation with an instant
// provider, after a warm-up, giving the main thread's CPU a turn (its schedstat, Linux), the process's
// CPU, the wall time and one durable write (the agent bench's baseline) in the same run. With
// PROFILE=<file> the main thread's CPU profile of the measured turns only (not the start, not the
// warm-up) is written there, for Chrome's DevTools or a script. TOOLS=<n> tool calls a turn, TURNS, WARM.
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Service } from '../src/service';
import { instantProvider } from './agent';
import { fmt, mainThreadSched } from './util';

function post(session: Session, method: string, params: object = {}): Promise<unknown> {
  return new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
}

async function main(): Promise<void> {
  const turns = Number(process.env.TURNS ?? 1000);
  const profile = process.env.PROFILE;
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-profile-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => instantProvider(Number(process.env.TOOLS ?? 0)) });
  const session = new Session();
  try {
    let conversationId: string | undefined;
    const turn = async () => (conversationId = (await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } })).conversation_id);
    for (let i = 0; i < Number(process.env.WARM ?? 300); i++) await turn();
    if (profile) {
      session.connect();
      await post(session, 'Profiler.enable');
      await post(session, 'Profiler.setSamplingInterval', { interval: 100 });
      await post(session, 'Profiler.start');
    }
    const cpu = process.cpuUsage();
    const mainCpu = mainThreadSched();
    const started = performance.now();
    for (let i = 0; i < turns; i++) await turn();
    const wall = (performance.now() - started) / turns;
    const mainNow = mainThreadSched();
    const main = (mainNow.run - mainCpu.run) / turns;
    const mainWait = (mainNow.wait - mainCpu.wait) / turns;
    const all = process.cpuUsage(cpu);
    if (profile) writeFileSync(profile, JSON.stringify(((await post(session, 'Profiler.stop')) as { profile: unknown }).profile));
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) await service.store.meta.set('bench.baseline', String(i));
    const write = (performance.now() - t0) / 200;
    console.log(
      `${process.env.TOOLS ?? 0}-tool turn: wall ${fmt(wall)} ms, main thread CPU ${fmt(main)} ms (waiting for a core ${fmt(mainWait)} ms), process CPU ${fmt((all.user + all.system) / 1000 / turns)} ms; ` +
        `one durable write ${fmt(write)} ms (${fmt(wall / write, 1)}x)`,
    );
  } finally {
    session.disconnect();
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

void main();
