// What the bytes a durable write appends cost its fdatasync, in the product's path: one service, its own
// durable write (`meta.set`, bench/agent.ts's baseline) with a record of the baseline's size and one
// padded to the bytes a 0-tool turn appends (its user message's and its reply's records), taking turns in
// blocks in the same minutes. On ext4 an fdatasync whose appended bytes start a new 4 KiB block allocates
// it (one more journal block, the unwritten extent converted by a kworker): ~0.1 ms more; a turn's ~1.3 KB
// start one every ~3 turns, the baseline's ~160 B one every ~26 writes (docs/design.md, s19 turn19b).
// `npx tsx bench/sync-bytes.ts` (BLOCKS, WRITES a block; DIR: where the data directory is made; BYTES: more
// record sizes to pad to, comma-separated, e.g. what a turn would append with shorter records).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Service } from '../src/service';
import { instantProvider } from './agent';
import { fmt, percentile } from './util';

const BLOCKS = Number(process.env.BLOCKS ?? 40);
const WRITES = Number(process.env.WRITES ?? 100);

async function main(): Promise<void> {
  const dir = await mkdtemp(join(process.env.DIR ?? tmpdir(), 'ra-bench-sync-bytes-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, provider: () => instantProvider(0) });
  const bytes = () => service.store.db.stats().journalBytes;
  try {
    let conversationId: string | undefined;
    for (let i = 0; i < 50; i++) conversationId = (await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } })).conversation_id;
    let before = bytes();
    const turns = 100;
    for (let i = 0; i < turns; i++) await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } });
    const turnBytes = (bytes() - before) / turns;
    before = bytes();
    await service.store.meta.set('bench.baseline', '0');
    const smallBytes = bytes() - before;
    const padded = (target: number, name: string) => {
      const pad = Math.max(0, Math.round(target - smallBytes));
      return { name: `${name} (${smallBytes + pad} B)`, value: (i: number) => String(i).padEnd(pad + 1, 'x'), latencies: [] as number[] };
    };
    const more = (process.env.BYTES ?? '').split(',').filter((b) => b.trim() !== '');
    const sizes = [
      { name: `baseline's record (${smallBytes} B)`, value: (i: number) => String(i), latencies: [] as number[] },
      padded(turnBytes, "padded to a turn's bytes"),
      ...more.map((b) => padded(Number(b), 'padded')),
    ];
    let n = 0;
    for (const size of sizes) for (let i = 0; i < 1000; i++) await service.store.meta.set('bench.baseline', size.value(n++));
    for (let b = 0; b < BLOCKS; b++) {
      for (const size of b % 2 === 0 ? sizes : [...sizes].reverse()) {
        for (let i = 0; i < WRITES; i++) {
          const t = performance.now();
          await service.store.meta.set('bench.baseline', size.value(n++));
          size.latencies.push(performance.now() - t);
        }
      }
    }
    console.log(
      `a 0-tool turn appends ${fmt(turnBytes, 0)} B; ${BLOCKS} blocks of ${WRITES} meta.set a size, alternating; load ${loadavg()
        .map((l) => fmt(l))
        .join(' ')}`,
    );
    for (const size of sizes) {
      const sorted = [...size.latencies].sort((x, y) => x - y);
      const mean = sorted.reduce((s, x) => s + x, 0) / sorted.length;
      console.log(`  ${size.name.padEnd(36)} p50 ${fmt(percentile(sorted, 50), 3)} ms  p90 ${fmt(percentile(sorted, 90), 3)}  mean ${fmt(mean, 3)}`);
    }
  } finally {
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

void main();
