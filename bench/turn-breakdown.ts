// What one agent turn (0 tools, instant provider) costs the store: journal flushes (each one write and
// one fdatasync), history-worker requests and history.db fsyncs, counted over many turns.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Service } from '../src/service';
import { instantProvider } from './agent';

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-breakdown-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => instantProvider(0) });
  try {
    const { store } = service;
    const history = store.history as unknown as { nextId: number };
    for (const conversations of [1, 8]) {
      const ids: Array<string | undefined> = Array.from({ length: conversations }, () => undefined);
      const turn = () => Promise.all(ids.map(async (id, i) => (ids[i] = (await service.agent.chat({ message: 'bench turn', conversationId: id, source: { kind: 'lan' } })).conversation_id)));
      await turn();
      const rounds = 50;
      const flushes = store.db.stats().flushes;
      const requests = history.nextId;
      const syncs = (await store.history.stats()).syncs;
      for (let i = 0; i < rounds; i++) await turn();
      const turns = rounds * conversations;
      console.log(
        `${conversations} concurrent: per turn ${((store.db.stats().flushes - flushes) / turns).toFixed(2)} journal flushes, ` +
          `${((history.nextId - requests - 1) / turns).toFixed(2)} history-worker requests, ${(((await store.history.stats()).syncs - syncs) / turns).toFixed(2)} history.db fsyncs`,
      );
    }
  } finally {
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

void main();
