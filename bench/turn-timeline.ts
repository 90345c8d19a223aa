// One 0-tool turn's timeline around its fdatasync (issue 25): many turns of one conversation with an
// instant provider, after a warm-up. Each turn is stamped (performance.now) where it is called, where the
// model is asked, where the journal's write and fdatasync start and end (FileHandle.prototype patched:
// on the main thread only the journal calls datasync), and where the turn's promise settles. Printed:
// the median of each phase, and of the main thread's CPU (its schedstat) inside each, so the work done
// after the fdatasync (on the turn's critical path) is told from the work done while it runs.
// `npx tsx bench/turn-timeline.ts` (TURNS, WARM).
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CompletionRequest, CompletionResult, Provider } from '../src/agent/providers/types';
import { Service } from '../src/service';
import { instantProvider } from './agent';
import { fmt, mainThreadCpuMs } from './util';

interface Stamp {
  at: number;
  cpu: number;
}

const stamp = (): Stamp => ({ at: performance.now(), cpu: mainThreadCpuMs() });

async function main(): Promise<void> {
  const turns = Number(process.env.TURNS ?? 1000);
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-timeline-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  // The turn's stamps, filled by the patched calls while it runs.
  let marks: Record<string, Stamp> = {};
  const mark = (name: string) => {
    if (!(name in marks)) marks[name] = stamp();
  };
  (globalThis as Record<string, unknown>).__mark = mark;
  const probe = await open(join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void>; write: (...args: unknown[]) => Promise<unknown> };
  await probe.close();
  const { datasync, write } = proto;
  let writes = 0;
  proto.write = async function (this: unknown, ...args: unknown[]) {
    const n = ++writes;
    mark(`write${n}`);
    try {
      return await write.apply(this, args);
    } finally {
      mark(`written${n}`);
    }
  };
  proto.datasync = async function (this: unknown) {
    mark('sync');
    try {
      return await datasync.call(this);
    } finally {
      mark('synced');
    }
  };
  const instant = instantProvider(0);
  const provider: Provider = {
    name: 'instant',
    complete(request: CompletionRequest): Promise<CompletionResult> {
      mark('asked');
      return instant.complete(request);
    },
  };
  const service = await Service.open({ dataDir: dir, provider: () => provider });
  try {
    let conversationId: string | undefined;
    const rows: Array<Record<string, Stamp>> = [];
    const turn = async (keep: boolean) => {
      marks = { start: stamp() };
      writes = 0;
      const out = await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } }, (e) => {
        if (e.event === 'chat.message' && e.message.role === 'assistant') mark('replyEvent');
      });
      marks.end = stamp();
      conversationId = out.conversation_id;
      if (keep) rows.push(marks);
    };
    for (let i = 0; i < Number(process.env.WARM ?? 300); i++) await turn(false);
    for (let i = 0; i < turns; i++) await turn(true);
    const phases: Array<[string, string, string]> = [
      ['called -> line', 'start', 'line'],
      ['line -> userStored', 'line', 'userStored'],
      ['userStored -> loop', 'userStored', 'loop'],
      ['loop -> shape', 'loop', 'shape'],
      ['shape -> rows', 'shape', 'rows'],
      ['rows -> system', 'rows', 'system'],
      ['system -> view', 'system', 'view'],
      ['view -> built', 'view', 'built'],
      ['called -> built', 'start', 'built'],
      ['called -> user message write starts', 'start', 'write1'],
      ['its write', 'write1', 'written1'],
      ['called -> model asked', 'start', 'asked'],
      ['model asked -> reply write starts', 'asked', 'write2'],
      ['its write', 'write2', 'written2'],
      ['reply written -> fdatasync starts', 'written2', 'sync'],
      ['fdatasync', 'sync', 'synced'],
      ['fdatasync done -> reply event', 'synced', 'replyEvent'],
      ['synced -> dur1', 'synced', 'dur1'],
      ['dur1 -> dur2', 'dur1', 'dur2'],
      ['dur2 -> ev', 'dur2', 'ev'],
      ['ev -> act', 'ev', 'act'],
      ['act -> logged', 'act', 'logged'],
      ['logged -> end', 'logged', 'end'],
      ['reply event -> turn settles', 'replyEvent', 'end'],
      ['whole turn', 'start', 'end'],
    ];
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const complete = rows.filter((r) => phases.every(([, a, b]) => r[a] && r[b]));
    console.log(`${complete.length} of ${rows.length} turns with every stamp (one fdatasync each); medians:`);
    for (const [name, a, b] of phases) {
      const wall = median(complete.map((r) => r[b].at - r[a].at));
      const cpu = median(complete.map((r) => r[b].cpu - r[a].cpu));
      console.log(`  ${name.padEnd(34)} wall ${fmt(wall, 3)} ms, main thread CPU ${fmt(cpu, 3)} ms`);
    }
  } finally {
    proto.datasync = datasync;
    proto.write = write;
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

void main();
