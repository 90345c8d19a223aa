// Child process for the store tests (run with `node --import tsx`):
//   hold <dir>    open the store, print "ready", close and exit when stdin ends
//   writer <dir>  append messages forever, printing each id once its write has resolved (durable)
//   blobs <dir>   put 1-3 MiB blobs of random bytes forever, printing each hash once its put has resolved
import { randomBytes } from 'node:crypto';
import { BlobStore } from '../../src/store/blob-store';
import { openStore } from '../../src/store/index';

async function hold(dir: string): Promise<void> {
  const store = await openStore(dir);
  process.stdout.write('ready\n');
  process.stdin.resume();
  process.stdin.on('end', () => {
    void store.close().then(() => process.exit(0));
  });
}

async function writer(dir: string): Promise<void> {
  // Tiny segments so compactions run (and get killed) while writes go on.
  const store = await openStore(dir, { segmentBytes: 8 * 1024 });
  await store.conversations.create({ id: 'c', title: 'crash', source: 'ws', created_at: '2024-01-01T00:00:00.000Z' });
  process.stdout.write('ready\n');
  let next = 0;
  const lane = async (): Promise<never> => {
    for (;;) {
      const i = next++;
      const id = `m${i}`;
      await store.messages.append({
        id,
        conversation_id: 'c',
        role: i % 2 === 0 ? 'user' : 'assistant',
        content: `message ${i} ${'x'.repeat(i % 200)}`,
        timestamp: new Date(Date.UTC(2024, 0, 1) + i).toISOString(),
      });
      process.stdout.write(`${id}\n`);
    }
  };
  // Several writes in flight at once, so acknowledged records share group commits.
  await Promise.all([lane(), lane(), lane(), lane()]);
}

async function blobs(dir: string): Promise<never> {
  const store = await BlobStore.open(dir);
  process.stdout.write('ready\n');
  for (let i = 0; ; i++) {
    const { hash } = await store.put(randomBytes((1 + (i % 3)) * 1024 * 1024));
    process.stdout.write(`${hash}\n`);
  }
}

const MODES = { hold, writer, blobs } as const;
const [mode, dir] = process.argv.slice(2);
if (!dir || !(mode in MODES)) throw new Error('usage: store-child.ts hold|writer|blobs <dir>');
MODES[mode as keyof typeof MODES](dir).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
