// The build's rehearsal of a start (cli-loader.ts, writeCodeCache). V8's code cache holds the functions
// compiled when it is made: made after the bundle's load only, it held the modules' bodies but none of
// the functions a start then runs (service.json's read, the store's open, the listen, a WebSocket's
// auth and first command, the warm-up), each compiled from source at its first call in every start,
// 15-20 ms of the main thread between listening and the first command's answer (docs/design.md,
// "Listening to ready (s13, start13)"). So the cache is made after one real start, as `serve`'s: a new
// data directory in the temporary directory, a loopback port, a WebSocket that connects while the store
// opens and asks `auth` and `get_config` (bench/start.ts's client), the warm-up waited for, then a stop.
// It asks no provider (the warm-up's practice answers itself on loopback) and leaves nothing behind.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ProtocolClient } from './protocol/client';
import { Service } from './service';

/** What a rehearsal saw: its commands answered, and whether the warm-up ran whole. */
export interface Rehearsal {
  answered: string[];
  warmedUp: boolean;
}

/** How long the rehearsal waits for the warm-up (a practice turn on a loaded build machine: seconds). */
const WARM_UP_WAIT_MS = 30_000;

export async function rehearseStart(): Promise<Rehearsal> {
  const dataDir = await mkdtemp(join(tmpdir(), 'ra-rehearsal-'));
  try {
    const service = await Service.begin({ dataDir, host: '127.0.0.1', port: 0 });
    try {
      const { port } = await service.start();
      // A new data directory's service.json has its access token once begin() is over.
      const answered = await askOverWebSocket(`ws://127.0.0.1:${port}/ws`, service.config.current.auth_token ?? '');
      let timer: NodeJS.Timeout | undefined;
      const warmedUp = await Promise.race([service.warmedUp, new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), WARM_UP_WAIT_MS)))]);
      clearTimeout(timer);
      return { answered, warmedUp };
    } finally {
      await service.stop();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** A client as a phone's: connects at once (the store may still be opening), `auth`, then `get_config`. */
async function askOverWebSocket(url: string, token: string): Promise<string[]> {
  const socket = new WebSocket(url);
  const client = new ProtocolClient({ send: (text) => socket.send(text) }, { idPrefix: 'rehearsal', timeoutMs: 30_000 });
  socket.on('message', (data) => client.receive(String(data)));
  socket.on('close', () => client.closed());
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const answered: string[] = [];
    for (const [type, ask] of [
      ['auth', () => client.authenticate(token)],
      ['get_config', () => client.request({ type: 'get_config' })],
    ] as const) {
      const reply = await ask();
      if (reply.status !== 'ok') throw new Error(`${type}: ${JSON.stringify(reply)}`);
      answered.push(type);
    }
    return answered;
  } finally {
    socket.close();
  }
}
