// `npm run bench -- export`: export_conversation of a long conversation (about 10 MB, some 80 pieces of
// 128 K characters) through the real service, against its own first piece (one full read and one
// rendering of the conversation) in the same run. Linear means the whole download costs little more than
// that first piece (goal under 2x); re-reading and re-rendering per piece made it about as many times the
// first piece as there are pieces.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { openStore } from '../src/store/index';
import { fmt, spawnListening } from './util';

export const TOKEN = 'bench-access-token-0123456789abcdef0123';
const MESSAGES = 3000;
/** The service's build (BENCH_CLI=path measures another one). */
export const CLI = process.env.BENCH_CLI ?? join(__dirname, '..', 'dist', 'cli.js');

/** A data directory holding one conversation of MESSAGES messages (about 10 MB of markdown). */
export async function seed(dir: string): Promise<void> {
  const store = await openStore(dir);
  await store.conversations.create({ id: 'long', title: 'a long conversation', source: 'ws', created_at: new Date(0).toISOString() });
  const body = (i: number) => `message ${i}: ${'lorem ipsum dolor sit amet '.repeat(120)}`;
  for (let i = 0; i < MESSAGES; i += 500) {
    await store.messages.appendMany(
      Array.from({ length: 500 }, (_, k) => ({
        id: `m${i + k}`,
        conversation_id: 'long',
        role: (i + k) % 2 === 0 ? ('user' as const) : ('assistant' as const),
        content: body(i + k),
        timestamp: new Date(1000 * (i + k)).toISOString(),
      })),
    );
  }
  await store.close();
}

/** An authenticated WebSocket client of the service on `port`: one request at a time, its answer parsed. */
export function client(port: number): Promise<(frame: object) => Promise<{ data: { next_offset: number | null; until: string; text: string } }>> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  const waiting: ((reply: never) => void)[] = [];
  ws.on('message', (data) => waiting.shift()?.(JSON.parse(String(data)) as never));
  const request = (frame: object) => new Promise<never>((resolve) => (waiting.push(resolve), ws.send(JSON.stringify(frame))));
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => void request({ type: 'auth', token: TOKEN }).then(() => resolve(request)));
  });
}

type Request = Awaited<ReturnType<typeof client>>;

/** One whole download of the long conversation: its first piece's ms, the whole's, and how many pieces (`afterFirst` is called between the first and the second). */
export async function download(request: Request, format: 'markdown' | 'json' = 'markdown', afterFirst?: () => void): Promise<{ first: number; whole: number; pieces: number }> {
  const started = performance.now();
  let piece = (await request({ type: 'export_conversation', conversation_id: 'long', format })).data;
  const first = performance.now() - started;
  afterFirst?.();
  let pieces = 1;
  while (piece.next_offset !== null) {
    piece = (await request({ type: 'export_conversation', conversation_id: 'long', format, offset: piece.next_offset, until: piece.until })).data;
    pieces += 1;
  }
  return { first, whole: performance.now() - started, pieces };
}

export async function benchExport(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-export-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN }));
  await seed(dir);
  const service = await spawnListening([CLI, 'serve', '--data-dir', dir, '--port', '0']);
  try {
    const request = await client(service.port);
    let best = { first: Infinity, whole: Infinity, pieces: 0 };
    for (let round = 0; round < 3; round += 1) {
      const { first, whole, pieces } = await download(request);
      if (whole < best.whole) best = { first, whole, pieces };
    }
    console.log(
      `export of ${MESSAGES} messages in ${best.pieces} pieces: whole ${fmt(best.whole, 0)} ms, first piece (one full read) ${fmt(best.first, 0)} ms, ratio ${fmt(best.whole / best.first)} (goal < 2)`,
    );
    return { pieces: best.pieces, ratio: best.whole / best.first };
  } finally {
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) void benchExport();
